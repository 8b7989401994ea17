/**
 * Builds the admission chain from one config snapshot: operator blocks first, in config order,
 * then one `public-prefix:<bucket>` block per bucket with public prefixes. The chain is rebuilt
 * when the snapshot changes (a reload), on the first request that sees the new snapshot.
 */
import type { Config } from "../config/mod.ts";
import { getLogger } from "../observability/mod.ts";
import type { AdmissionBlock } from "./chain.ts";
import { operatorBlock } from "./operator-blocks.ts";
import { wholeBucket } from "./public-prefix.ts";

const log = getLogger("svc::admission");

export const PUBLIC_PREFIX_BLOCK = "public-prefix:";

export interface AdmissionChain {
  blocks: readonly AdmissionBlock[];
  /** Whether client addresses may come from proxy headers (source IP predicates). */
  trustProxyHeaders: boolean;
}

/** The synthesized block admitting anonymous reads and listings of a bucket's public keys. */
export function publicPrefixBlock(bucket: string, prefixes: readonly string[]): AdmissionBlock {
  return {
    name: `${PUBLIC_PREFIX_BLOCK}${bucket}`,
    match: {
      methods: ["GET", "HEAD"],
      bucket,
      authenticated: false,
      publicPrefixes: [...prefixes],
    },
    action: "allow-anonymous",
  };
}

export function buildAdmissionChain(config: Config): { chain: AdmissionChain; warnings: string[] } {
  const warnings: string[] = [];
  const blocks = config.admission.blocks.map((block) => operatorBlock(block, warnings));
  // With authentication off every request is already admitted: public prefixes would only
  // narrow anonymous listings that are otherwise complete.
  const open = config.access.authentication?.trim().toLowerCase() === "none";
  if (!open) {
    for (const [bucket, policy] of Object.entries(config.storage.buckets)) {
      if (policy.public_prefixes.length > 0) {
        blocks.push(publicPrefixBlock(bucket, policy.public_prefixes));
      }
    }
  }
  return {
    chain: { blocks, trustProxyHeaders: config.advanced.trust_proxy_headers },
    warnings,
  };
}

/** Buckets the config makes entirely public (an empty public prefix). */
export function wholePublicBuckets(config: Config): string[] {
  return Object.entries(config.storage.buckets)
    .filter(([, policy]) => wholeBucket(policy.public_prefixes))
    .map(([bucket]) => bucket);
}

/**
 * The chain of the current snapshot, built now and rebuilt when the snapshot changes. Each
 * build logs its warnings, and a warning for every bucket that became entirely public.
 */
export function admissionChainSource(current: () => Config): () => AdmissionChain {
  let built: { config: Config; chain: AdmissionChain } | undefined;
  let publicBuckets = new Set<string>();
  const source = () => {
    const config = current();
    if (built?.config !== config) {
      const { chain, warnings } = buildAdmissionChain(config);
      for (const warning of warnings) log.warn(warning);
      const whole = new Set(wholePublicBuckets(config));
      for (const bucket of whole) {
        if (!publicBuckets.has(bucket)) {
          log.warn(
            `bucket "${bucket}" is entirely public: anonymous clients may read and list every key`,
            { block: `${PUBLIC_PREFIX_BLOCK}${bucket}` },
          );
        }
      }
      publicBuckets = whole;
      built = { config, chain };
    }
    return built.chain;
  };
  source();
  return source;
}
