/**
 * `SVC_*` environment variables, each mapped onto a path of the configuration document. They are
 * applied on top of the file, so the environment wins. Values are parsed here so a bad one is
 * reported with the variable's name rather than a document path the operator never wrote.
 */
import { ConfigError } from "./schema.ts";

type Kind = "string" | "int" | "number" | "bool";

interface EnvBinding {
  name: string;
  path: string[];
  kind: Kind;
}

const binding = (name: string, path: string, kind: Kind = "string"): EnvBinding => ({
  name,
  path: path.split("."),
  kind,
});

export const ENV_BINDINGS: EnvBinding[] = [
  binding("SVC_LISTEN_ADDR", "advanced.listen_addr"),
  binding("SVC_LOG_LEVEL", "advanced.log_level"),
  binding("SVC_REQUEST_TIMEOUT_SECS", "advanced.request_timeout_secs", "int"),
  binding("SVC_MAX_CONCURRENT_REQUESTS", "advanced.max_concurrent_requests", "int"),
  binding("SVC_MAX_MULTIPART_UPLOADS", "advanced.max_multipart_uploads", "int"),
  binding("SVC_MULTIPART_IDLE_TTL_HOURS", "advanced.multipart_idle_ttl_hours", "number"),
  binding("SVC_MAX_OBJECT_SIZE", "advanced.max_object_size", "int"),
  binding("SVC_DEBUG_HEADERS", "advanced.debug_headers", "bool"),
  binding("SVC_CORS_PERMISSIVE", "advanced.cors_permissive", "bool"),
  binding("SVC_TRUST_PROXY_HEADERS", "advanced.trust_proxy_headers", "bool"),
  binding("SVC_CLOCK_SKEW_SECONDS", "advanced.clock_skew_seconds", "int"),
  binding("SVC_REPLAY_WINDOW_SECS", "advanced.replay_window_secs", "int"),
  binding("SVC_RATE_LIMIT_MAX_ATTEMPTS", "advanced.rate_limit_max_attempts", "int"),
  binding("SVC_RATE_LIMIT_WINDOW_SECS", "advanced.rate_limit_window_secs", "int"),
  binding("SVC_RATE_LIMIT_LOCKOUT_SECS", "advanced.rate_limit_lockout_secs", "int"),
  binding("SVC_LOG_FORMAT", "advanced.log_format"),
  binding("SVC_LOG_RING_SIZE", "advanced.log_ring_size", "int"),
  binding("SVC_LOG_RING_LEVEL", "advanced.log_ring_level"),
  binding("SVC_AUDIT_RING_SIZE", "advanced.audit_ring_size", "int"),
  binding("SVC_READY_TIMEOUT_SECS", "advanced.ready_timeout_secs", "number"),
  binding("SVC_READY_RETRIES", "advanced.ready_retries", "int"),
  binding("SVC_READY_CACHE_TTL_SECS", "advanced.ready_cache_ttl_secs", "int"),
  binding("SVC_AUTHENTICATION", "access.authentication"),
  binding("SVC_ACCESS_KEY_ID", "access.access_key_id"),
  binding("SVC_SECRET_ACCESS_KEY", "access.secret_access_key"),
];

function parseValue(name: string, raw: string, kind: Kind): unknown {
  const text = raw.trim();
  switch (kind) {
    case "string":
      return raw;
    case "bool":
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off)$/i.test(text)) return false;
      throw new ConfigError(`${name}: expected true or false, got "${raw}"`);
    case "int":
    case "number": {
      const value = Number(text);
      if (text === "" || !Number.isFinite(value) || (kind === "int" && !Number.isInteger(value))) {
        throw new ConfigError(
          `${name}: expected ${kind === "int" ? "an integer" : "a number"}, got "${raw}"`,
        );
      }
      return value;
    }
  }
}

function setPath(document: Record<string, unknown>, path: string[], value: unknown): void {
  let node = document;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (next === undefined || next === null) node[part] = {};
    else if (typeof next !== "object" || Array.isArray(next)) {
      throw new ConfigError(
        `${path.join(".")}: cannot apply environment over a non-object "${part}"`,
      );
    }
    node = node[part] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

/**
 * Applies the environment onto a parsed (sectioned) document in place. `SVC_DATA_DIR` sets the
 * filesystem path of whichever filesystem backend the document uses. Returns which dotted
 * document path each applied variable set, so validation can name the variable.
 */
export function applyEnvironment(
  document: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Map<string, string> {
  const sources = new Map<string, string>();
  for (const { name, path, kind } of ENV_BINDINGS) {
    const raw = env[name];
    if (raw === undefined) continue;
    setPath(document, path, parseValue(name, raw, kind));
    sources.set(path.join("."), name);
  }
  const dataDir = env.SVC_DATA_DIR;
  if (dataDir !== undefined) {
    const storage = document.storage ??= {};
    if (typeof storage !== "object" || Array.isArray(storage)) {
      throw new ConfigError(`storage: cannot apply SVC_DATA_DIR over a non-object "storage"`);
    }
    const section = storage as Record<string, unknown>;
    const backend = section.backend as Record<string, unknown> | undefined;
    if (backend?.type === "filesystem") {
      backend.path = dataDir;
      sources.set("storage.backend.path", "SVC_DATA_DIR");
    } else if (backend === undefined) {
      section.filesystem = dataDir;
      sources.set("storage.filesystem", "SVC_DATA_DIR");
    }
  }
  return sources;
}
