/**
 * Whether a bucket's backend honours conditional writes, asked once per bucket and process
 * before its first baseline is created (baseline-guard.ts): a second `If-None-Match: *` commit of
 * one probe name must fail. A store that ignores the condition (s3rver does) cannot keep several
 * svc instances from creating two baselines of one deltaspace, so one error says so: one svc
 * instance over it stays correct (its deltaspace locks order its own writes), a fleet does not.
 * Decided: logged, not refused, since a single instance over such a store is a supported setup.
 */

import { getLogger } from "../../observability/mod.ts";
import { baselineCacheKey, type DeltaContext } from "../delta-context.ts";
import { GROUP_PREFIX } from "../layout.ts";

const log = getLogger("svc::delta");

const probed = new WeakMap<object, Map<string, Promise<boolean>>>();

/** The probe's name: under the reserved prefix, so never listed and swept like a stale claim. */
function probeName(): string {
  return `${GROUP_PREFIX}retiring/probe-${crypto.randomUUID()}`;
}

async function commitProbe(ctx: DeltaContext, bucket: string, name: string): Promise<void> {
  const body = new TextEncoder().encode("probe");
  const staged = await ctx.inner.stageObject(bucket, name, new Blob([body]).stream());
  try {
    await staged.commit({
      size: body.byteLength,
      etag: "",
      md5: "",
      sha256: "",
      contentType: "text/plain",
      userMeta: {},
      headers: {},
      lastModified: Date.now(),
      storage: "passthrough",
    }, { ifNoneMatch: true });
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

async function probe(ctx: DeltaContext, bucket: string): Promise<boolean> {
  const name = probeName();
  await commitProbe(ctx, bucket, name);
  try {
    await commitProbe(ctx, bucket, name);
  } catch (err) {
    if (err instanceof Error && "code" in err && err.code === "PreconditionFailed") return true;
    throw err;
  } finally {
    await ctx.inner.deleteObject(bucket, name).catch(() => {});
  }
  log.error(
    "The backend of this bucket ignores conditional writes (If-None-Match): several svc " +
      "instances over it can create two baselines of one deltaspace and lose writes; run one " +
      "svc instance over it, or use a store that honours conditional writes",
    { bucket },
  );
  return false;
}

/**
 * Whether conditional writes hold on the backend of `bucket` (probed once; a failed probe is
 * asked again next time). Never throws: a probe that cannot run is not a verdict.
 */
export async function conditionalWritesHold(ctx: DeltaContext, bucket: string): Promise<boolean> {
  let byBucket = probed.get(ctx);
  if (!byBucket) probed.set(ctx, byBucket = new Map());
  const key = baselineCacheKey(ctx, bucket, "");
  let verdict = byBucket.get(key);
  if (!verdict) {
    verdict = probe(ctx, bucket);
    byBucket.set(key, verdict);
    verdict.catch(() => byBucket.delete(key));
  }
  return await verdict.catch(() => true);
}
