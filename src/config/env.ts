/**
 * `SVC_*` environment variables, each mapped onto a path of the configuration document. They are
 * applied on top of the file, so the environment wins. Values are parsed here so a bad one is
 * reported with the variable's name rather than a document path the operator never wrote.
 */
import { isPlainObject as isObject } from "../lib/mod.ts";
import { ConfigError } from "./schema/schema-common.ts";

type Kind = "string" | "int" | "number" | "bool" | "bool-or-auto";

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
  binding("SVC_MAX_CONNECTIONS", "advanced.max_connections", "int"),
  binding("SVC_HEADER_TIMEOUT_SECS", "advanced.header_timeout_secs", "number"),
  binding("SVC_IDLE_TIMEOUT_SECS", "advanced.idle_timeout_secs", "number"),
  binding("SVC_BODY_STALL_TIMEOUT_SECS", "advanced.body_stall_timeout_secs", "number"),
  binding("SVC_READY_MAX_SLOT_WAIT_SECS", "advanced.ready_max_slot_wait_secs", "number"),
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
  binding("SVC_MAX_DELTA_RATIO", "advanced.max_delta_ratio", "number"),
  binding("SVC_STORAGE_COMPRESSION", "advanced.storage_compression"),
  binding("SVC_ZSTD_LEVEL", "advanced.zstd_level", "int"),
  binding("SVC_CACHE_MB", "advanced.cache_size_mb", "int"),
  binding("SVC_REBUILT_CACHE_MB", "advanced.rebuilt_cache_size_mb", "int"),
  binding("SVC_METADATA_CACHE_MB", "advanced.metadata_cache_mb", "int"),
  binding("SVC_CODEC_CONCURRENCY", "advanced.codec_concurrency", "int"),
  binding("SVC_CODEC_TIMEOUT_SECS", "advanced.codec_timeout_secs", "int"),
  binding("SVC_CODEC_SLOT_WAIT_SECS", "advanced.codec_slot_wait_secs", "number"),
  binding("SVC_BLOCKING_THREADS", "advanced.blocking_threads", "int"),
  binding("SVC_MAX_PASSTHROUGH_OBJECT_SIZE", "advanced.max_passthrough_object_size", "int"),
  binding("SVC_S3_CONNECT_TIMEOUT_SECS", "advanced.s3_connect_timeout_secs", "number"),
  binding("SVC_S3_READ_TIMEOUT_SECS", "advanced.s3_read_timeout_secs", "number"),
  binding(
    "SVC_S3_OPERATION_ATTEMPT_TIMEOUT_SECS",
    "advanced.s3_operation_attempt_timeout_secs",
    "number",
  ),
  binding("SVC_S3_STALL_GRACE_SECS", "advanced.s3_stall_grace_secs", "number"),
  binding("SVC_PARITY_HEAD_CONCURRENCY", "advanced.parity_head_concurrency", "int"),
  binding("SVC_PARITY_MAX_OBJECTS", "advanced.parity_max_objects", "int"),
  binding("SVC_BOOT_BACKEND_PROBE", "advanced.boot_backend_probe"),
  binding("SVC_BACKEND_LIST_COOLDOWN_SECS", "advanced.backend_list_cooldown_secs", "number"),
  binding("SVC_BACKEND_LIST_TIMEOUT_SECS", "advanced.backend_list_timeout_secs", "number"),
  binding("SVC_BACKEND_LIST_FRESH_SECS", "advanced.backend_list_fresh_secs", "number"),
  binding("SVC_STREAM_COPY_THRESHOLD", "advanced.stream_copy_threshold", "int"),
  binding("SVC_MULTIPART_PART_SIZE", "advanced.multipart_part_size", "int"),
  binding("SVC_UPLOAD_CONCURRENCY", "advanced.upload_concurrency", "int"),
  binding("SVC_REPLICATION_TRANSFERS", "advanced.replication_transfers", "int"),
  binding("SVC_MAX_TOTAL_MULTIPART_BYTES", "advanced.max_total_multipart_bytes", "int"),
  binding("SVC_SESSION_TTL_HOURS", "advanced.session_ttl_hours", "number"),
  binding("SVC_SECURE_COOKIES", "advanced.secure_cookies", "bool-or-auto"),
  binding("SVC_OIDC_ALLOW_HTTP_ISSUERS", "advanced.oidc_allow_http_issuers", "bool"),
  binding("SVC_BOOTSTRAP_PASSWORD_HASH", "advanced.bootstrap_password_hash"),
  binding("SVC_TLS_ENABLED", "advanced.tls.enabled", "bool"),
  binding("SVC_TLS_CERT", "advanced.tls.cert_path"),
  binding("SVC_TLS_KEY", "advanced.tls.key_path"),
  binding("SVC_CONFIG_SYNC_BUCKET", "advanced.config_sync_bucket"),
  binding("SVC_CONFIG_SYNC_POLL_SECS", "advanced.config_sync_poll_secs", "int"),
  binding("SVC_AUTHENTICATION", "access.authentication"),
  binding("SVC_ACCESS_KEY_ID", "access.access_key_id"),
  binding("SVC_SECRET_ACCESS_KEY", "access.secret_access_key"),
];

function parseValue(name: string, raw: string, kind: Kind): unknown {
  const text = raw.trim();
  switch (kind) {
    case "string":
      return raw;
    case "bool-or-auto":
      if (/^auto$/i.test(text)) return "auto";
      if (/^(true|1|yes|on)$/i.test(text)) return true;
      if (/^(false|0|no|off)$/i.test(text)) return false;
      throw new ConfigError(`${name}: expected true, false or auto, got "${raw}"`);
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

/** The `storage` section, created when absent; a ConfigError naming `variable` otherwise. */
function storageOf(document: Record<string, unknown>, variable: string): Record<string, unknown> {
  const storage = document.storage ??= {};
  if (!isObject(storage)) {
    throw new ConfigError(`storage: cannot apply ${variable} over a non-object "storage"`);
  }
  return storage;
}

/** `SVC_BACKEND_<NAME>_...` spelling of a backend name. */
export function backendEnvName(name: string): string {
  return name.toUpperCase().replace(/[-.]/g, "_");
}

/** Companions of the single S3 backend: variable, backend-block field, shorthand field. */
const S3_COMPANIONS: [string, string, Kind][] = [
  ["SVC_S3_REGION", "region", "string"],
  ["SVC_S3_PATH_STYLE", "force_path_style", "bool"],
  ["SVC_BE_AWS_ACCESS_KEY_ID", "access_key_id", "string"],
  ["SVC_BE_AWS_SECRET_ACCESS_KEY", "secret_access_key", "string"],
];

/**
 * `SVC_S3_ENDPOINT` and its companions, onto the single S3 backend. The endpoint selects an S3
 * backend: it replaces a filesystem single backend of the file (the environment wins) and
 * creates `storage.backend` when none is configured. Companions without an S3 backend are
 * ignored.
 */
function applyS3(
  document: Record<string, unknown>,
  env: Record<string, string | undefined>,
  sources: Map<string, string>,
): void {
  const endpoint = env.SVC_S3_ENDPOINT;
  const present = endpoint !== undefined || S3_COMPANIONS.some(([name]) => env[name] !== undefined);
  if (!present) return;
  const storage = storageOf(document, "SVC_S3_*");
  if (endpoint !== undefined) {
    if (storage.s3 !== undefined) {
      storage.s3 = endpoint;
      sources.set("storage.s3", "SVC_S3_ENDPOINT");
    } else {
      const backend = isObject(storage.backend) && storage.backend.type === "s3"
        ? storage.backend
        : { type: "s3" };
      delete storage.filesystem;
      backend.endpoint = endpoint;
      storage.backend = backend;
      sources.set("storage.backend.endpoint", "SVC_S3_ENDPOINT");
    }
  }
  const shorthand = storage.s3 !== undefined;
  const target = shorthand
    ? storage
    : isObject(storage.backend) && storage.backend.type === "s3"
    ? storage.backend
    : null;
  if (target === null) return;
  for (const [name, field, kind] of S3_COMPANIONS) {
    const raw = env[name];
    if (raw === undefined) continue;
    target[field] = parseValue(name, raw, kind);
    sources.set(shorthand ? `storage.${field}` : `storage.backend.${field}`, name);
  }
}

/** Sets `field` of an encryption block held at `holder[key]`, creating the block. */
function setEncryption(
  holder: Record<string, unknown>,
  key: string,
  field: string,
  value: string,
  path: string,
): void {
  const block = holder[key] ??= {};
  if (!isObject(block)) {
    throw new ConfigError(`${path}: cannot apply the environment over a non-object "${key}"`);
  }
  block[field] = value;
}

/**
 * Encryption key sources: `SVC_ENCRYPTION_KEY` / `SVC_SSE_KMS_KEY_ID` for the single-backend
 * path (`storage.backend_encryption`), `SVC_BACKEND_<NAME>_ENCRYPTION_KEY` /
 * `SVC_BACKEND_<NAME>_SSE_KMS_KEY_ID` for each named backend. Only the key fields are set; the
 * mode stays whatever the document says.
 */
function applyEncryption(
  document: Record<string, unknown>,
  env: Record<string, string | undefined>,
  sources: Map<string, string>,
): void {
  const single: [string, string][] = [
    ["SVC_ENCRYPTION_KEY", "key"],
    ["SVC_SSE_KMS_KEY_ID", "kms_key_id"],
  ];
  for (const [name, field] of single) {
    const value = env[name];
    if (value === undefined) continue;
    const storage = storageOf(document, name);
    setEncryption(storage, "backend_encryption", field, value, "storage.backend_encryption");
    sources.set(`storage.backend_encryption.${field}`, name);
  }
  const backends = isObject(document.storage) ? document.storage.backends : undefined;
  if (!Array.isArray(backends)) return;
  backends.forEach((backend, index) => {
    if (!isObject(backend) || typeof backend.name !== "string") return;
    const prefix = `SVC_BACKEND_${backendEnvName(backend.name)}_`;
    const perBackend: [string, string][] = [
      [`${prefix}ENCRYPTION_KEY`, "key"],
      [`${prefix}SSE_KMS_KEY_ID`, "kms_key_id"],
    ];
    for (const [name, field] of perBackend) {
      const value = env[name];
      if (value === undefined) continue;
      const path = `storage.backends.${index}.encryption`;
      setEncryption(backend, "encryption", field, value, path);
      sources.set(`${path}.${field}`, name);
    }
  });
}

/**
 * Applies the environment onto a parsed (sectioned) document in place: the `ENV_BINDINGS`,
 * `SVC_ADMIN_PASSWORD_HASH` (legacy alias of `SVC_BOOTSTRAP_PASSWORD_HASH`, which wins), the S3
 * backend variables, the encryption key sources, and `SVC_DATA_DIR`, which sets the filesystem
 * path of whichever filesystem backend the document uses. Returns which dotted document path
 * each applied variable set, so validation can name the variable.
 */
export function applyEnvironment(
  document: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Map<string, string> {
  const sources = new Map<string, string>();
  const legacyHash = env.SVC_ADMIN_PASSWORD_HASH;
  if (legacyHash !== undefined && env.SVC_BOOTSTRAP_PASSWORD_HASH === undefined) {
    setPath(document, ["advanced", "bootstrap_password_hash"], legacyHash);
    sources.set("advanced.bootstrap_password_hash", "SVC_ADMIN_PASSWORD_HASH");
  }
  for (const { name, path, kind } of ENV_BINDINGS) {
    const raw = env[name];
    if (raw === undefined) continue;
    setPath(document, path, parseValue(name, raw, kind));
    sources.set(path.join("."), name);
  }
  applyS3(document, env, sources);
  applyEncryption(document, env, sources);
  const dataDir = env.SVC_DATA_DIR;
  if (dataDir !== undefined) {
    const section = storageOf(document, "SVC_DATA_DIR");
    const backend = section.backend as Record<string, unknown> | undefined;
    if (backend?.type === "filesystem") {
      backend.path = dataDir;
      sources.set("storage.backend.path", "SVC_DATA_DIR");
    } else if (backend === undefined && section.s3 === undefined) {
      section.filesystem = dataDir;
      sources.set("storage.filesystem", "SVC_DATA_DIR");
    }
  }
  return sources;
}
