/**
 * The configuration model: four optional sections (`admission`, `access`, `storage`,
 * `advanced`), each field with its type, range and default. The schema is the single source of
 * defaults; `Config` is what the rest of svc reads (through one snapshot per request).
 */
import * as v from "valibot";

const bool = v.boolean();
const positiveInt = v.pipe(v.number(), v.integer(), v.minValue(1));
const nonNegativeInt = v.pipe(v.number(), v.integer(), v.minValue(0));

const filesystemPath = v.pipe(
  v.string(),
  v.minLength(1, "expected a non-empty path"),
  v.check(
    (path) => !path.split(/[\\/]/).includes(".."),
    (issue) => `must not contain ".." components, got "${issue.input}"`,
  ),
);

/**
 * Splits `host:port`, `[v6]:port` or `:port` (host defaults to 0.0.0.0); null when the text is
 * not one of those or the port is above 65535. Port 0 asks the system for a free port.
 */
export function splitListenAddress(address: string): { hostname: string; port: number } | null {
  const match = /^(?:\[([^\[\]\s]+)\]|([^:\[\]\s]*)):(\d{1,5})$/.exec(address.trim());
  if (!match) return null;
  const port = Number(match[3]);
  if (port > 65535) return null;
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}

const listenAddress = v.pipe(
  v.string(),
  v.check(
    (address) => splitListenAddress(address) !== null,
    (issue) => `expected host:port, got "${issue.input}"`,
  ),
);

export const accessSchema = v.object({
  iam_mode: v.optional(v.picklist(["gui", "declarative"]), "gui"),
  /** `none` = open access; absent = decided by whether credentials exist. */
  authentication: v.optional(v.string()),
  access_key_id: v.optional(v.pipe(v.string(), v.minLength(1))),
  secret_access_key: v.optional(v.pipe(v.string(), v.minLength(1))),
});

export const backendSchema = v.object({
  type: v.picklist(["filesystem", "s3"]),
  path: v.optional(filesystemPath),
  endpoint: v.optional(v.string()),
  region: v.optional(v.string(), "us-east-1"),
  force_path_style: v.optional(bool, true),
  access_key_id: v.optional(v.string()),
  secret_access_key: v.optional(v.string()),
});

export const storageSchema = v.object({
  filesystem: v.optional(filesystemPath),
  backend: v.optional(backendSchema),
});

export const advancedSchema = v.object({
  listen_addr: v.optional(listenAddress, "0.0.0.0:9000"),
  log_level: v.optional(v.string()),
  request_timeout_secs: v.optional(positiveInt, 300),
  max_concurrent_requests: v.optional(positiveInt, 1024),
  max_multipart_uploads: v.optional(positiveInt, 1000),
  multipart_idle_ttl_hours: v.optional(v.pipe(v.number(), v.minValue(0)), 24),
  max_object_size: v.optional(nonNegativeInt, 104857600),
  debug_headers: v.optional(bool, false),
  cors_permissive: v.optional(bool, false),
  trust_proxy_headers: v.optional(bool, false),
  clock_skew_seconds: v.optional(nonNegativeInt, 300),
  replay_window_secs: v.optional(nonNegativeInt, 2),
  rate_limit_max_attempts: v.optional(positiveInt, 100),
  rate_limit_window_secs: v.optional(positiveInt, 300),
  rate_limit_lockout_secs: v.optional(nonNegativeInt, 600),
  log_format: v.optional(v.picklist(["text", "json"]), "text"),
  log_ring_size: v.optional(positiveInt, 2000),
  log_ring_level: v.optional(v.picklist(["error", "warn", "info", "debug", "trace"]), "info"),
  audit_ring_size: v.optional(positiveInt, 500),
  ready_timeout_secs: v.optional(v.pipe(v.number(), v.minValue(0.001)), 3),
  ready_retries: v.optional(nonNegativeInt, 2),
  ready_cache_ttl_secs: v.optional(nonNegativeInt, 0),
});

export const configSchema = v.object({
  admission: v.optional(v.unknown()),
  access: v.optional(accessSchema, {}),
  storage: v.optional(storageSchema, {}),
  advanced: v.optional(advancedSchema, {}),
});

export type Config = v.InferOutput<typeof configSchema>;
export type AccessConfig = v.InferOutput<typeof accessSchema>;
export type StorageConfig = v.InferOutput<typeof storageSchema>;
export type AdvancedConfig = v.InferOutput<typeof advancedSchema>;

/** Raised for a document that does not match the model; the message carries the field path. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/**
 * Validates a parsed document, filling defaults. Throws ConfigError naming every bad path; when
 * `sources` says a path was set by an environment variable or flag, the message names it too.
 */
export function validateConfig(
  document: unknown,
  sources: ReadonlyMap<string, string> = new Map(),
): Config {
  const result = v.safeParse(configSchema, document ?? {});
  if (result.success) return result.output;
  const lines = result.issues.map((issue) => {
    const path = v.getDotPath(issue) ?? "(document)";
    const source = sources.get(path);
    return `${path}${source ? ` (from ${source})` : ""}: ${issue.message}`;
  });
  throw new ConfigError(lines.join("; "));
}
