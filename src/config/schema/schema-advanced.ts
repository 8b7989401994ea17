/**
 * The `advanced` section: every tunable of the spec's advanced table that has a YAML key or an
 * environment variable, with its default, range and the clamps/floors the table gives.
 */
import * as v from "valibot";
import {
  bool,
  clampedInt,
  describe,
  duration,
  int,
  list,
  nonEmpty,
  num,
  numAbove,
  oneOf,
  record,
  str,
  strict,
  u64,
} from "./schema-common.ts";

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
  str,
  v.check(
    (address) => splitListenAddress(address) !== null,
    (issue) => `expected host:port, got "${issue.input}"`,
  ),
);

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** `num_cpus * 4`, at least 16. */
export function defaultCodecConcurrency(): number {
  return Math.max(16, (navigator.hardwareConcurrency || 1) * 4);
}

const slackRouteSchema = strict({
  name: nonEmpty,
  bucket: v.optional(nonEmpty),
  prefix_globs: v.optional(list(str), []),
  channel: nonEmpty,
});

export const eventDeliverySchema = strict({
  /**
   * Record object events in the outbox (src/events/); on by default. false records nothing,
   * so nothing can be delivered (a delivery that is enabled too is refused by the checks).
   */
  outbox: v.optional(bool, true),
  enabled: v.optional(bool, false),
  format: v.optional(oneOf(["raw", "slack"]), "raw"),
  webhook_url: v.optional(nonEmpty),
  webhook_urls: v.optional(list(nonEmpty), []),
  webhook_headers: v.optional(record(str), {}),
  /** HMAC-SHA256 key of the `X-Svc-Signature` header (src/events/signing.ts); a secret. */
  webhook_secret: v.optional(nonEmpty),
  tick_interval: v.optional(duration(0.001), "10s"),
  batch_size: v.optional(int(1), 50),
  request_timeout: v.optional(duration(0.001), "5s"),
  max_attempts: v.optional(int(1), 8),
  retry_base: v.optional(duration(0.001), "5s"),
  retry_max: v.optional(duration(0.001), "5m"),
  stale_claim_after: v.optional(duration(0.001), "60s"),
  delivered_retention: v.optional(duration(), "24h"),
  delivered_max_rows: v.optional(int(0), 10000),
  prune_batch: v.optional(int(1), 100),
  slack_username: v.optional(str),
  slack_icon_emoji: v.optional(str),
  slack_bot_token: v.optional(nonEmpty),
  slack_channel: v.optional(nonEmpty),
  slack_notify_kinds: v.optional(list(nonEmpty), ["ObjectCreated"]),
  slack_include_globs: v.optional(list(str), []),
  slack_exclude_globs: v.optional(list(str), []),
  slack_routes: v.optional(list(slackRouteSchema), []),
  /** Slack Web API base of bot-token mode (tests point it at a local receiver). */
  slack_api_url: v.optional(nonEmpty, "https://slack.com/api"),
});

export const tlsSchema = strict({
  enabled: v.optional(bool, false),
  /** Absent = a self-signed certificate is generated. */
  cert_path: v.optional(nonEmpty),
  key_path: v.optional(nonEmpty),
});

const advancedEntries = {
  listen_addr: v.optional(listenAddress, "0.0.0.0:9000"),
  log_level: v.optional(str),
  request_timeout_secs: v.optional(int(1), 300),
  max_concurrent_requests: v.optional(int(1), 1024),
  /** Open client connections; the effective cap is also at most half of RLIMIT_NOFILE. */
  max_connections: v.optional(int(1), 4096),
  /** A new connection must deliver its first request head (a POST form: its fields) in this. */
  header_timeout_secs: v.optional(numAbove(0), 10),
  /** A keep-alive connection with no request in flight is closed after this. */
  idle_timeout_secs: v.optional(numAbove(0), 75),
  /** A request body that delivers no byte for this long while svc waits for one is cut. */
  body_stall_timeout_secs: v.optional(numAbove(0), 30),
  /** /_/ready answers 503 while a request has waited this long for a slot; 0 turns it off. */
  ready_max_slot_wait_secs: v.optional(num(0), 10),
  max_multipart_uploads: v.optional(int(1), 1000),
  multipart_idle_ttl_hours: v.optional(num(0), 24),
  max_object_size: v.optional(u64, 104857600),
  debug_headers: v.optional(bool, false),
  cors_permissive: v.optional(bool, false),
  trust_proxy_headers: v.optional(bool, false),
  clock_skew_seconds: v.optional(int(0), 300),
  /**
   * Upper bound on how long a signed write's signature is remembered (it is otherwise remembered
   * while it verifies: x-amz-date + clock_skew_seconds). 600 = twice the default skew, so by
   * default for its whole validity whatever the client's clock; 0 disables replay detection.
   */
  replay_window_secs: v.optional(int(0), 600),
  rate_limit_max_attempts: v.optional(int(1), 100),
  rate_limit_window_secs: v.optional(int(1), 300),
  rate_limit_lockout_secs: v.optional(int(0), 600),
  log_format: v.optional(oneOf(["text", "json"]), "text"),
  log_ring_size: v.optional(int(1), 2000),
  log_ring_level: v.optional(oneOf(["error", "warn", "info", "debug", "trace"]), "info"),
  audit_ring_size: v.optional(int(1), 500),
  ready_timeout_secs: v.optional(num(0.001), 3),
  ready_retries: v.optional(int(0), 2),
  ready_cache_ttl_secs: v.optional(int(0), 0),
  max_delta_ratio: v.optional(num(0, 1), 0.75),
  /**
   * Storage compression (docs/COMPRESSION.md): `auto` stores delta baselines and compressible
   * passthrough objects as seekable zstd, `baselines` only baselines, `off` nothing new
   * (compressed objects stay readable).
   */
  storage_compression: v.optional(oneOf(["auto", "baselines", "off"]), "auto"),
  /** zstd level of newly compressed objects. */
  zstd_level: v.optional(int(1, 19), 3),
  /** Under 1024 is allowed but gives a startup advisory. */
  cache_size_mb: v.optional(int(0), 100),
  /**
   * Verified rebuilt delta objects kept as files so a repeat GET streams one instead of decoding
   * (`<state dir>/.svc/rebuilt`, LRU by bytes). 0 disables it.
   */
  rebuilt_cache_size_mb: v.optional(int(0), 512),
  /** 0 disables the metadata cache. */
  metadata_cache_mb: v.optional(int(0), 50),
  codec_concurrency: v.optional(int(1), defaultCodecConcurrency),
  codec_timeout_secs: v.optional(int(1), 60),
  /**
   * How long a delta-eligible PUT waits for a free codec slot before it is stored passthrough
   * instead (a write is never refused because compression is busy). 0: never wait.
   */
  codec_slot_wait_secs: v.optional(num(0), 10),
  blocking_threads: v.optional(int(1), 512),
  /**
   * Largest multipart object (the total at CompleteMultipartUpload). A single request body (PUT,
   * POST, one part) is bounded by max_object_size, which also bounds delta eligibility.
   */
  max_passthrough_object_size: v.optional(u64, 64 * GiB),
  s3_connect_timeout_secs: v.optional(numAbove(0), 10),
  s3_read_timeout_secs: v.optional(numAbove(0), 60),
  s3_operation_attempt_timeout_secs: v.optional(numAbove(0), 300),
  s3_stall_grace_secs: v.optional(num(0), 30),
  /** Clamped into 1-64. */
  parity_head_concurrency: v.optional(clampedInt(1, 64), 15),
  /** Floored at 1000. */
  parity_max_objects: v.optional(clampedInt(1000), 1000000),
  boot_backend_probe: v.optional(oneOf(["enforce", "warn", "off"]), "enforce"),
  backend_list_cooldown_secs: v.optional(num(0), 30),
  backend_list_timeout_secs: v.optional(numAbove(0), 5),
  /** 0 disables the listing freshness window. */
  backend_list_fresh_secs: v.optional(num(0), 5),
  /** Floored at 1 byte. */
  stream_copy_threshold: v.optional(clampedInt(1), 64 * MiB),
  /** Clamped to at least 5 MiB. */
  multipart_part_size: v.optional(clampedInt(5 * MiB), 64 * MiB),
  upload_concurrency: v.optional(int(1, 16), 4),
  replication_transfers: v.optional(int(1, 64), 4),
  /**
   * Absent = max_object_size x max_multipart_uploads / 4, at least max_passthrough_object_size
   * (`effectiveMaxTotalMultipartBytes`).
   */
  max_total_multipart_bytes: v.optional(u64),
  session_ttl_hours: v.optional(numAbove(0), 4),
  /**
   * The admin session cookie's `Secure` flag. `auto`: Secure when the request came over TLS (the
   * listener's own, or `X-Forwarded-Proto: https` behind a trusted proxy); a plain-HTTP browser
   * on another host would otherwise silently drop the cookie and never stay logged in.
   */
  secure_cookies: v.optional(
    v.union(
      [bool, v.literal("auto")],
      (issue) => `expected true, false or auto, got ${describe(issue.input)}`,
    ),
    "auto",
  ),
  /**
   * OIDC login: providers whose issuer is a plain `http://` URL are refused unless this is true
   * (for a provider on the same host or a test provider; never across a network).
   */
  oidc_allow_http_issuers: v.optional(bool, false),
  /** bcrypt hash (or its base64 form); stripped from exports. Absent = generated on first run. */
  bootstrap_password_hash: v.optional(nonEmpty),
  tls: v.optional(tlsSchema, {}),
  config_sync_bucket: v.optional(nonEmpty),
  /** How often an instance checks the config sync bucket for another instance's IAM change. */
  config_sync_poll_secs: v.optional(int(1), 300),
  event_delivery: v.optional(eventDeliverySchema, {}),
};

export const advancedSchema = strict(advancedEntries);

export type AdvancedConfig = v.InferOutput<typeof advancedSchema>;

/**
 * The global in-flight multipart byte cap: the configured value, else max_object_size x
 * max_multipart_uploads / 4 (SPEC.md), raised to max_passthrough_object_size so that one upload
 * of the largest allowed multipart object fits the default. Kept derived (not stored) so it
 * follows those settings on reload.
 */
export function effectiveMaxTotalMultipartBytes(advanced: AdvancedConfig): number {
  return advanced.max_total_multipart_bytes ?? Math.max(
    Math.floor(advanced.max_object_size * advanced.max_multipart_uploads / 4),
    advanced.max_passthrough_object_size,
  );
}
export type EventDeliveryConfig = v.InferOutput<typeof eventDeliverySchema>;
