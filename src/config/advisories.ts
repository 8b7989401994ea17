/**
 * Config advisories: findings about a valid configuration that are worth a warning but never
 * block a load or a save. (A bare `${username}` in a permission is listed among the advisories by
 * the spec but is also an IAM validation failure; svc rejects it during validation, so it never
 * reaches this module.)
 */
import type { Config } from "./schema/schema.ts";

const RATE_LIMIT_FIELDS = [
  "rate_limit_max_attempts",
  "rate_limit_window_secs",
  "rate_limit_lockout_secs",
];

function section(document: Record<string, unknown> | undefined, name: string) {
  const value = document?.[name];
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/**
 * The advisories for `config`. `document` is the sectioned input it was validated from (file plus
 * environment, before defaults); it tells settings the operator chose from defaults. Rate limiting
 * counts as enabled when any `rate_limit_*` setting was given (the flag that turns S3 request rate
 * limiting on is not specified).
 */
export function configAdvisories(config: Config, document?: Record<string, unknown>): string[] {
  const advisories: string[] = [];
  const advanced = section(document, "advanced");
  const rateLimitSet = RATE_LIMIT_FIELDS.filter((field) => advanced?.[field] !== undefined);
  if (rateLimitSet.length > 0 && !config.advanced.trust_proxy_headers) {
    advisories.push(
      `advanced.${rateLimitSet[0]}: rate limiting is enabled while trust_proxy_headers is ` +
        "false; behind a reverse proxy every client shares one rate-limit bucket",
    );
  }
  const open = config.access.authentication?.trim().toLowerCase() === "none";
  for (const [bucket, policy] of Object.entries(config.storage.buckets)) {
    if (policy.quota_bytes === 0) {
      advisories.push(
        `storage.buckets.${bucket}.quota_bytes: 0 freezes the bucket (all writes are rejected)`,
      );
    }
    if (open && policy.public_prefixes.length > 0) {
      advisories.push(
        `storage.buckets.${bucket}.public_prefixes: set while access.authentication is none; ` +
          "every request is already anonymous-capable, so the prefixes restrict nothing",
      );
    }
    if (policy.public_prefixes.includes("")) {
      advisories.push(`storage.buckets.${bucket}: the whole bucket is public (empty prefix)`);
    }
  }
  const { replay_window_secs: window, clock_skew_seconds: skew } = config.advanced;
  if (window > 0 && window < 2 * skew) {
    advisories.push(
      `advanced.replay_window_secs: ${window} s is less than twice clock_skew_seconds ` +
        `(${skew} s); a signed write replayed after it is forgotten but while its signature ` +
        "still verifies is executed again",
    );
  }
  if (config.advanced.cache_size_mb < 1024) {
    advisories.push(
      `advanced.cache_size_mb: ${config.advanced.cache_size_mb} MB is under 1024 MB; delta ` +
        "reconstruction may thrash the reference cache (SVC_CACHE_MB)",
    );
  }
  return advisories;
}
