/**
 * Applying a new configuration to a running server. The caller validates the whole document
 * first (nothing changes on an invalid one); this module decides which changed settings take
 * effect now and which wait for a restart. A restart-only setting is kept at its running value
 * in the live snapshot, so the server never half-applies it, and is reported in
 * `requires_restart`.
 */
import { isPlainObject } from "../lib/mod.ts";
import type { Config } from "../config/mod.ts";

export interface ApplyResult {
  /** Changed settings now in effect (dotted paths). */
  applied: string[];
  /** Changed settings that take effect at the next start. */
  requires_restart: string[];
  warnings: string[];
}

/**
 * Settings the spec marks as not hot-reloadable (or bound at startup), as path prefixes. Backend
 * changes (named backends added or removed, the single backend replaced, the filesystem
 * directory moved) apply live: the runtime builds a new storage stack and swaps it in.
 */
export const RESTART_ONLY = [
  "advanced.listen_addr",
  "advanced.log_format",
  "advanced.log_ring_size",
  "advanced.log_ring_level",
  "advanced.audit_ring_size",
  "advanced.request_timeout_secs",
  "advanced.max_concurrent_requests",
  "advanced.max_multipart_uploads",
  "advanced.blocking_threads",
  "advanced.debug_headers",
  "advanced.cors_permissive",
  "advanced.cache_size_mb",
  "advanced.rebuilt_cache_size_mb",
  "advanced.metadata_cache_mb",
  "advanced.codec_timeout_secs",
  "advanced.trust_proxy_headers",
  "advanced.session_ttl_hours",
  "advanced.clock_skew_seconds",
  "advanced.replay_window_secs",
  "advanced.secure_cookies",
  "advanced.tls",
  "advanced.config_sync_bucket",
  "advanced.config_sync_poll_secs",
  "advanced.boot_backend_probe",
];

function isRestartOnly(path: string): boolean {
  return RESTART_ONLY.some((prefix) => path === prefix || path.startsWith(`${prefix}.`));
}

type Json = unknown;

/** Dotted paths whose values differ; arrays and scalars compare whole. */
export function changedPaths(before: Json, after: Json, prefix = ""): string[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].sort().flatMap((key) =>
      changedPaths(before[key], after[key], prefix ? `${prefix}.${key}` : key)
    );
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [prefix];
}

function getPath(root: Json, path: string[]): Json {
  let node = root;
  for (const part of path) {
    if (!isPlainObject(node)) return undefined;
    node = node[part];
  }
  return node;
}

function setPath(root: Record<string, Json>, path: string[], value: Json): void {
  let node = root;
  for (const part of path.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {};
    node = node[part] as Record<string, Json>;
  }
  const last = path[path.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
}

/**
 * The snapshot to run with: `next`, except that restart-only settings keep their running
 * values. `next` itself is what gets persisted.
 */
export function planApply(
  running: Config,
  next: Config,
): { snapshot: Config; result: ApplyResult } {
  const snapshot = structuredClone(next) as Config;
  const result: ApplyResult = { applied: [], requires_restart: [], warnings: [] };
  for (const path of changedPaths(running, next)) {
    if (isRestartOnly(path)) {
      result.requires_restart.push(path);
      const parts = path.split(".");
      setPath(
        snapshot as unknown as Record<string, Json>,
        parts,
        structuredClone(getPath(running, parts)),
      );
    } else {
      result.applied.push(path);
    }
  }
  if (result.requires_restart.length > 0) {
    result.warnings.push(
      `requires_restart: ${result.requires_restart.join(", ")} take effect at the next start`,
    );
  }
  return { snapshot, result };
}
