// What the code cannot say about each `SVC_*` variable, for scripts/env-reference.ts: its
// one-line meaning, and for a variable read outside the config overlay its key, default and
// "live". The check fails when a variable the code reads has no note here, or a note names one
// it does not read.

export interface EnvNote {
  meaning: string;
  /** Config key it sets (markdown), for variables outside `ENV_BINDINGS`. */
  key?: string;
  /** Overrides the default taken from the config schema (or gives one where it has none). */
  default?: string;
  /** Overrides "yes"/"restart" from RESTART_ONLY, or gives it for a variable read directly. */
  live?: string;
}

export const ENV_NOTES: Record<string, EnvNote> = {
  "SVC_ACCESS_KEY_ID": {
    meaning: "Access key id of the bootstrap S3 credential pair",
    default: "–",
  },
  "SVC_ACCESS_LOG": {
    meaning: "`off`, `stderr` or a file path (reopened on `SIGHUP`): one JSON line per request",
    default: "`off`",
    live: "start only",
  },
  "SVC_ADMIN_ACCESS_KEY_ID": {
    meaning: "Access key id `svc admin login` logs in with as an IAM admin user (docs/CLI.md)",
    default: "–",
    live: "CLI only",
  },
  "SVC_ADMIN_PASSWORD": {
    meaning:
      "Bootstrap password `svc admin login` logs in with, before SVC_BOOTSTRAP_PASSWORD (docs/CLI.md)",
    default: "–",
    live: "CLI only",
  },
  "SVC_ADMIN_PASSWORD_HASH": {
    meaning: "Legacy alias of `SVC_BOOTSTRAP_PASSWORD_HASH`, which wins when both are set",
    key: "`advanced.bootstrap_password_hash`",
    default: "– (generated at first start)",
    live: "start only",
  },
  "SVC_ADMIN_SECRET_ACCESS_KEY": {
    meaning: "Secret key `svc admin login` sends with SVC_ADMIN_ACCESS_KEY_ID (docs/CLI.md)",
    default: "–",
    live: "CLI only",
  },
  "SVC_ADMIN_SESSION_FILE": {
    meaning:
      "Where `svc admin` keeps its session (default `$XDG_CONFIG_HOME/svc/admin-session.json`, mode 600)",
    default: "–",
    live: "CLI only",
  },
  "SVC_ADMIN_URL": {
    meaning:
      "Server `svc admin` talks to, unless --server (default: the session's server, else http://127.0.0.1:9000)",
    default: "–",
    live: "CLI only",
  },
  "SVC_AUDIT_RING_SIZE": { meaning: "Audit entries kept in memory for `GET /_/audit`" },
  "SVC_AUTHENTICATION": { meaning: "`none` runs the S3 API without credentials", default: "–" },
  "SVC_BACKEND_<NAME>_ENCRYPTION_KEY": {
    meaning: "Encryption key of the named backend (its `encryption` block keeps its mode)",
    key: "`storage.backends[].encryption.key`",
    default: "–",
    live: "yes",
  },
  "SVC_BACKEND_<NAME>_SSE_KMS_KEY_ID": {
    meaning: "SSE-KMS key id of the named backend",
    key: "`storage.backends[].encryption.kms_key_id`",
    default: "–",
    live: "yes",
  },
  "SVC_BACKEND_LIST_COOLDOWN_SECS": {
    meaning: "A backend whose bucket listing failed is not asked again for this long",
  },
  "SVC_BACKEND_LIST_FRESH_SECS": {
    meaning: "A merged bucket listing is reused this long (0: off)",
  },
  "SVC_BACKEND_LIST_TIMEOUT_SECS": { meaning: "Bound on one backend's bucket listing" },
  "SVC_BACKUP_PASSWORD": {
    meaning: "Password `svc admin backup export` seals a backup with and `import` opens it with",
    default: "–",
    live: "CLI only",
  },
  "SVC_BE_AWS_ACCESS_KEY_ID": {
    meaning:
      "Access key id of the single S3 backend; also the fallback of any S3 backend block without one",
    key: "`storage.backend.access_key_id`",
    default: "–",
    live: "yes",
  },
  "SVC_BE_AWS_SECRET_ACCESS_KEY": {
    meaning:
      "Secret key of the single S3 backend; also the fallback of any S3 backend block without one",
    key: "`storage.backend.secret_access_key`",
    default: "–",
    live: "yes",
  },
  "SVC_BLOCKING_THREADS": {
    meaning: "Accepted for compatibility; has no effect (a startup warning says so)",
  },
  "SVC_BODY_STALL_TIMEOUT_SECS": {
    meaning: "A request body that delivers no byte this long is cut (504 RequestTimeout)",
  },
  "SVC_BOOTSTRAP_PASSWORD": {
    meaning:
      "Password `svc config apply` and `svc admin login` log in with (the CLI only; the server never reads it)",
    default: "–",
    live: "CLI only",
  },
  "SVC_BOOTSTRAP_PASSWORD_HASH": {
    meaning:
      "bcrypt hash (or its base64) of the bootstrap admin password; keys the config database and sessions",
    default: "– (generated at first start)",
    live: "start only",
  },
  "SVC_BOOT_BACKEND_PROBE": {
    meaning: "`enforce`, `warn` or `off`: whether svc starts when backends fail their first probe",
  },
  "SVC_CACHE_MB": { meaning: "Delta baseline cache size in MiB" },
  "SVC_CLOCK_SKEW_SECONDS": { meaning: "Allowed client clock skew for SigV4 signatures" },
  "SVC_CODEC_CONCURRENCY": { meaning: "xdelta3 runs at a time", default: "max(16, 4 × CPUs)" },
  "SVC_CODEC_SLOT_WAIT_SECS": {
    meaning: "A delta-eligible PUT waits this long for a codec slot, then is stored passthrough",
  },
  "SVC_CODEC_TIMEOUT_SECS": { meaning: "An xdelta3 run past this is stopped" },
  "SVC_CONFIG": {
    meaning: "The config file, when `--config` is not given (reloads re-read the same file)",
    default: "`./svc.yaml`, then the search order",
    live: "start only",
  },
  "SVC_CONFIG_SYNC_BUCKET": {
    meaning:
      "Coordination bucket (on an S3 backend) for IAM changes and replication leases between instances",
    default: "–",
  },
  "SVC_CONFIG_SYNC_POLL_SECS": { meaning: "How often an instance checks the config sync bucket" },
  "SVC_CORS_PERMISSIVE": { meaning: "Development only: any web origin may call the S3 API" },
  "SVC_DATA_DIR": {
    meaning: "Directory of the filesystem backend in use (ignored when the single backend is S3)",
    key: "`storage.filesystem` / `storage.backend.path`",
    default: "`./data`",
    live: "yes",
  },
  "SVC_DEBUG_HEADERS": { meaning: "Adds `x-amz-storage-type` and `x-svc-cache` to responses" },
  "SVC_ENCRYPTION_KEY": {
    meaning: "Encryption key of the single backend (`backend_encryption` keeps its mode)",
    key: "`storage.backend_encryption.key`",
    default: "–",
    live: "yes",
  },
  "SVC_HEADER_TIMEOUT_SECS": {
    meaning:
      "A new connection must deliver its first request head (a POST form: its fields) in this",
  },
  "SVC_IDLE_TIMEOUT_SECS": { meaning: "A keep-alive connection idle this long is closed" },
  "SVC_LISTEN_ADDR": { meaning: "Listener address `host:port` (`--listen` wins)" },
  "SVC_LOG_FORMAT": { meaning: "Log lines as `text` or `json`" },
  "SVC_LOG_LEVEL": {
    meaning: "Level or tracing-style filter (`svc::s3=trace`); `RUST_LOG` wins over it",
    default: "`info,svc=debug`",
  },
  "SVC_LOG_RING_LEVEL": { meaning: "Lowest level kept in the in-memory log ring" },
  "SVC_LOG_RING_SIZE": { meaning: "Log lines kept in the in-memory log ring" },
  "SVC_MAINTENANCE_BATCH_SIZE": {
    meaning: "Keys per listing page of re-encrypt and migrate jobs (at most 1000)",
    default: "1000",
    live: "start only",
  },
  "SVC_MAINTENANCE_PACE_MS": {
    meaning: "Pause after each object of a maintenance job, to spare a busy backend",
    default: "0",
    live: "start only",
  },
  "SVC_MAX_CONCURRENT_REQUESTS": { meaning: "Requests served at once; more wait for a slot" },
  "SVC_MAX_CONNECTIONS": { meaning: "Open client connections (at most half the open-file limit)" },
  "SVC_MAX_DELTA_RATIO": {
    meaning: "A delta is kept only when smaller than this share of the object",
  },
  "SVC_MAX_MULTIPART_UPLOADS": {
    meaning: "Multipart uploads in progress; more answer 503 SlowDown",
  },
  "SVC_MAX_OBJECT_SIZE": {
    meaning: "Largest request body (PUT, POST, one part) and delta eligibility, in bytes",
  },
  "SVC_MAX_PASSTHROUGH_OBJECT_SIZE": {
    meaning:
      "Accepted; not built yet: passthrough objects are bounded by the max object size only (a startup warning says so)",
  },
  "SVC_MAX_TOTAL_MULTIPART_BYTES": {
    meaning: "Bytes all uploads in progress may hold; a part past it is 503 SlowDown",
    default: "max object size × max uploads ÷ 4",
  },
  "SVC_METADATA_CACHE_MB": { meaning: "Metadata cache size in MiB (0: off)" },
  "SVC_MULTIPART_IDLE_TTL_HOURS": {
    meaning: "Uploads idle this long are swept (at start and every 15 min)",
  },
  "SVC_MULTIPART_PART_SIZE": {
    meaning: "Part size of svc's own multipart uploads to S3 backends (at least 5 MiB)",
  },
  "SVC_OIDC_ALLOW_HTTP_ISSUERS": {
    meaning: "Allow plain-http OIDC issuers (a provider on the same host only)",
  },
  "SVC_PARITY_HEAD_CONCURRENCY": {
    meaning: "HEADs at a time of a replication parity audit (1-64)",
  },
  "SVC_PARITY_MAX_OBJECTS": {
    meaning: "Keys a parity audit scans before its report is capped (at least 1000)",
  },
  "SVC_RATE_LIMIT_LOCKOUT_SECS": {
    meaning: "How long an address locked out for failed authentications stays locked",
  },
  "SVC_RATE_LIMIT_MAX_ATTEMPTS": {
    meaning: "Failed authentications per address within the window that lock it out",
  },
  "SVC_RATE_LIMIT_WINDOW_SECS": { meaning: "Window the failed authentications are counted in" },
  "SVC_READY_CACHE_TTL_SECS": {
    meaning: "`/_/ready` reuses a backend check result this long (0: checks each time)",
  },
  "SVC_READY_MAX_SLOT_WAIT_SECS": {
    meaning: "`/_/ready` answers 503 while a request has waited this long for a slot (0: off)",
  },
  "SVC_READY_RETRIES": { meaning: "Retries of the `/_/ready` backend check" },
  "SVC_READY_TIMEOUT_SECS": { meaning: "Bound on one `/_/ready` backend check" },
  "SVC_REBASELINE_RATIO": {
    meaning:
      "A delta above this share of the object size counts a strike toward a new baseline generation (a number in 0-1)",
    default: "0.2",
    live: "per use",
  },
  "SVC_ZSTD_MEMORY_MB": {
    meaning:
      "Memory budget of concurrent zstd delta jobs in MiB (an encode over it uses xdelta3, a decode waits)",
    default: "1024",
    live: "restart",
  },
  "SVC_REBUILT_CACHE_MB": {
    meaning: "Rebuilt delta objects kept as files so a repeat GET streams one, in MiB (0: off)",
  },
  "SVC_REPLAY_WINDOW_SECS": {
    meaning: "Upper bound on how long a signed write is remembered against replay (0: off)",
  },
  "SVC_REPLICATION_TRANSFERS": { meaning: "Objects a replication run copies at a time" },
  "SVC_REQUEST_TIMEOUT_SECS": { meaning: "A request past this answers 504" },
  "SVC_S3_CONNECT_TIMEOUT_SECS": {
    meaning: "Connect timeout to S3 backends",
  },
  "SVC_S3_ENDPOINT": {
    meaning: "Makes the single backend S3 at this endpoint (replaces a filesystem single backend)",
    key: "`storage.backend.endpoint` (or `storage.s3`)",
    default: "–",
    live: "yes",
  },
  "SVC_S3_OPERATION_ATTEMPT_TIMEOUT_SECS": {
    meaning: "Bound on one attempt of an S3 backend operation",
  },
  "SVC_S3_PATH_STYLE": {
    meaning: "Path-style addressing of the single S3 backend",
    key: "`storage.backend.force_path_style`",
    default: "true",
    live: "yes",
  },
  "SVC_S3_READ_TIMEOUT_SECS": {
    meaning: "An S3 backend response that sends nothing this long fails",
  },
  "SVC_S3_REGION": {
    meaning: "Region of the single S3 backend",
    key: "`storage.backend.region`",
    default: "`us-east-1`",
    live: "yes",
  },
  "SVC_S3_STALL_GRACE_SECS": {
    meaning: "Grace before a stalled S3 backend transfer is cut",
  },
  "SVC_SCRUB_BYTES_PER_SEC": {
    meaning: "Pace of the integrity scan (0: unpaced; a scan start may give its own)",
    default: "16777216 (16 MiB/s)",
    live: "start only",
  },
  "SVC_SCRUB_MAX_FINDINGS": {
    meaning: "Findings an integrity scan keeps",
    default: "1000",
    live: "start only",
  },
  "SVC_SECRET_ACCESS_KEY": {
    meaning: "Secret key of the bootstrap S3 credential pair",
    default: "–",
  },
  "SVC_SECURE_COOKIES": {
    meaning:
      "Admin session cookie `Secure` flag: `auto` (when the request came over TLS), `true` or `false`",
  },
  "SVC_SESSION_TTL_HOURS": { meaning: "Admin session lifetime" },
  "SVC_SSE_KMS_KEY_ID": {
    meaning: "SSE-KMS key id of the single backend",
    key: "`storage.backend_encryption.kms_key_id`",
    default: "–",
    live: "yes",
  },
  "SVC_STORAGE_COMPRESSION": {
    meaning: "`auto`, `baselines` or `off`: which new objects are stored as seekable zstd",
  },
  "SVC_STREAM_COPY_THRESHOLD": {
    meaning: "Copies to S3 backends from this size stream instead of a single request",
  },
  "SVC_TEST_CLOCK_OFFSET_SECS": {
    meaning:
      "Test aid, never in production: shifts object timestamps and job ages by these seconds",
    default: "0",
    live: "start only",
  },
  "SVC_TLS_CERT": {
    meaning: "PEM certificate of the HTTPS listener",
    default: "– (self-signed, generated)",
  },
  "SVC_TLS_ENABLED": { meaning: "HTTPS on the listener (S3, admin API and UI)" },
  "SVC_TLS_KEY": {
    meaning: "PEM private key of the HTTPS listener",
    default: "– (self-signed, generated)",
  },
  "SVC_TRUST_PROXY_HEADERS": {
    meaning:
      "Client address from `X-Forwarded-For` (rightmost) and scheme from `X-Forwarded-Proto`",
  },
  "SVC_UPLOAD_CONCURRENCY": {
    meaning: "Parts in flight of svc's own multipart uploads to S3 backends (1-16)",
  },
  "SVC_ZSTD_LEVEL": { meaning: "zstd level of newly compressed objects (1-19)" },
};
