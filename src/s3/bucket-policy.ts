/**
 * The effective policy of a bucket as the S3 surface enforces it, computed from one config
 * snapshot (`storage.buckets`). A bucket without an entry gets the defaults: private, no quota,
 * client-writable.
 *
 * `replication_target_only` protects the real bucket, not a name: any bucket name that routes
 * to the same real bucket (same backend, absent meaning the default one, and the same real name,
 * `alias` or else the bucket's own name) is refused writes too, so an alias cannot be used to
 * write behind the replicator's back.
 */
import type { BucketPolicy, Config } from "../config/mod.ts";

export interface EffectiveBucketPolicy {
  bucket: string;
  publicPrefixes: readonly string[];
  /** Soft quota in logical bytes; undefined when unlimited, 0 when frozen. */
  quotaBytes?: number;
  /**
   * When client writes are refused because replication is the only writer: the policy entry
   * that says so (this bucket, or another name for the same real bucket). Undefined otherwise.
   */
  targetOnlyBy?: string;
}

/** Where a bucket name's objects really live: backend (empty = default) and real bucket name. */
function routeOf(config: Config, bucket: string, policy: BucketPolicy | undefined): string {
  const backend = policy?.backend ?? config.storage.default_backend ?? "";
  return `${backend}\u0000${policy?.alias ?? bucket}`;
}

export function bucketPolicy(config: Config, bucket: string): EffectiveBucketPolicy {
  const policies = config.storage.buckets;
  const own = Object.hasOwn(policies, bucket) ? policies[bucket] : undefined;
  let targetOnlyBy = own?.replication_target_only ? bucket : undefined;
  if (targetOnlyBy === undefined) {
    const route = routeOf(config, bucket, own);
    for (const [name, policy] of Object.entries(policies)) {
      if (policy.replication_target_only && routeOf(config, name, policy) === route) {
        targetOnlyBy = name;
        break;
      }
    }
  }
  return {
    bucket,
    publicPrefixes: own?.public_prefixes ?? [],
    ...(own?.quota_bytes !== undefined ? { quotaBytes: own.quota_bytes } : {}),
    ...(targetOnlyBy !== undefined ? { targetOnlyBy } : {}),
  };
}

/** Per-bucket policies of the current snapshot, recomputed when the snapshot changes. */
export function bucketPolicySource(
  current: () => Config,
): (bucket: string) => EffectiveBucketPolicy {
  let cache: { config: Config; policies: Map<string, EffectiveBucketPolicy> } | undefined;
  return (bucket) => {
    const config = current();
    if (cache?.config !== config) cache = { config, policies: new Map() };
    let policy = cache.policies.get(bucket);
    if (policy === undefined) {
      policy = bucketPolicy(config, bucket);
      // Bounded: names without a policy entry all share the default answer.
      if (cache.policies.size < 10_000) cache.policies.set(bucket, policy);
    }
    return policy;
  };
}
