/**
 * `POST /diagnostics/delta-efficiency/verify`: rebuilds up to `limit` deltas from their stored
 * bytes and baselines (below every cache) and checks each against its sha256. Picks the first
 * `limit` deltas in stored-name order, or with `sample` a uniform random sample of all of them
 * (reservoir sampling: memory is `limit` entries whatever the bucket holds). Reads are paced like
 * the scrub's.
 */
import type { ObjectInfo } from "../../storage/mod.ts";
import { DeltaChecks, type DeltaDecoder, type RawBackend } from "./object-checks.ts";
import { Pacer } from "./pacer.ts";
import { roleOf } from "./stored-names.ts";

export interface VerifyRequest {
  buckets: string[];
  limit: number;
  sample: boolean;
  bytesPerSec: number;
}

export interface VerifiedDelta {
  bucket: string;
  key: string;
  deltaspace: string;
  size: number;
  stored_bytes: number;
  ok: boolean;
  outcome: string;
  detail?: string;
}

export interface VerifyReport {
  deltas_seen: number;
  checked: number;
  ok: number;
  failed: number;
  sampled: boolean;
  results: VerifiedDelta[];
}

interface Candidate {
  bucket: string;
  key: string;
  deltaspace: string;
  info: ObjectInfo;
}

export async function verifyDeltas(
  deps: {
    raw: RawBackend;
    decode: DeltaDecoder;
    scratchDir: string;
    compressed(bucket: string): boolean;
  },
  request: VerifyRequest,
  signal?: AbortSignal,
): Promise<VerifyReport> {
  const picked: Candidate[] = [];
  let seen = 0;
  outer: for (const bucket of request.buckets) {
    if (!deps.compressed(bucket)) continue;
    let startAfter: string | undefined;
    for (;;) {
      signal?.throwIfAborted();
      const page = await deps.raw.listObjects(bucket, { prefix: "", startAfter, maxKeys: 1000 });
      for (const info of page.objects) {
        const role = roleOf(info, true);
        if (role?.role !== "delta") continue;
        seen++;
        const candidate = { bucket, key: role.key, deltaspace: role.deltaspace, info };
        if (picked.length < request.limit) picked.push(candidate);
        else if (request.sample) {
          const at = Math.floor(Math.random() * seen);
          if (at < request.limit) picked[at] = candidate;
        } else break outer;
      }
      if (!page.isTruncated || page.nextStartAfter === undefined) break;
      startAfter = page.nextStartAfter;
    }
  }
  // Grouped by deltaspace, so each baseline is fetched once.
  picked.sort((a, b) =>
    a.bucket < b.bucket
      ? -1
      : a.bucket > b.bucket
      ? 1
      : a.deltaspace < b.deltaspace
      ? -1
      : a.deltaspace > b.deltaspace
      ? 1
      : 0
  );
  const pacer = new Pacer(() => request.bytesPerSec, signal);
  const checks = new DeltaChecks(deps.raw, deps.decode, deps.scratchDir, pacer, signal);
  const results: VerifiedDelta[] = [];
  try {
    for (const c of picked) {
      const result = await checks.delta(c.bucket, c.info, c.deltaspace);
      if (result.outcome === "vanished") continue;
      results.push({
        bucket: c.bucket,
        key: c.key,
        deltaspace: c.deltaspace,
        size: c.info.meta.size,
        stored_bytes: c.info.storedSize,
        ok: result.outcome === "ok",
        outcome: result.outcome,
        ...(result.detail ? { detail: result.detail } : {}),
      });
    }
  } finally {
    await checks.release();
  }
  const ok = results.filter((r) => r.ok).length;
  return {
    deltas_seen: seen,
    checked: results.length,
    ok,
    failed: results.length - ok,
    sampled: request.sample,
    results,
  };
}
