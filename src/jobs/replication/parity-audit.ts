/**
 * The parity audit of a replication rule (`verify`): flat listings of the source scope and of
 * its destination, merged in key order, counted and compared key by key. Keys the rule never
 * replicates are left out on both sides. Contents are compared by logical SHA-256 when both
 * sides know it, else by MD5 (a plain upload's ETag) when both know it, else by size; a side
 * whose listing lacks the digests (an S3 backend) is HEADed, `parity_head_concurrency` at a time.
 * Scanning stops after `parity_max_objects` keys: the report is then marked `capped`. Key lists
 * in the report hold the first 100 of each kind; the counts cover the whole scan.
 */
import { compareUtf8, mapConcurrent, Semaphore, SvcError } from "../../lib/mod.ts";
import type { ReplicationRule } from "../../config/mod.ts";
import type { ObjectInfo, ObjectMeta } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import { RuleScope } from "./replication-scope.ts";
import { type ReaderDeps, SideReader } from "./side-reader.ts";

const LIST_CAP = 100;
const PAGE = 1000;

interface SideTotals {
  bucket: string;
  prefix: string;
  objects: number;
  bytes: number;
}

type Pair = { key: string; source: ObjectInfo | null; destination: ObjectInfo | null };

export async function parityAudit(
  rule: ReplicationRule,
  env: RuleEnv,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const config = env.config();
  const headConcurrency = config.advanced.parity_head_concurrency;
  const maxObjects = config.advanced.parity_max_objects;
  const scope = new RuleScope(rule);
  const metrics = env.metrics.replication;
  const deps: ReaderDeps = {
    list: (bucket, options) => env.objects().listObjects(bucket, options),
    limiter: new Semaphore(2),
    pageSize: PAGE,
    delimiter: "",
    signal,
    onList: () => metrics.listCalls.inc(),
  };
  const source = new SideReader(deps, scope.sourceBucket, scope.sourcePrefix, undefined);
  const destinationExists = await env.objects().backend.headBucket(scope.destinationBucket);
  const destination = new SideReader(
    deps,
    scope.destinationBucket,
    scope.destinationPrefix,
    undefined,
    destinationExists === null,
  );
  const totals = {
    source: side(scope.sourceBucket, scope.sourcePrefix),
    destination: side(scope.destinationBucket, scope.destinationPrefix),
  };
  const found = { missing: [] as string[], extra: [] as string[], differing: [] as string[] };
  const counts = { matching: 0, missing: 0, extra: 0, differing: 0, head_calls: 0 };
  let scanned = 0;
  let capped = false;
  const head = async (bucket: string, key: string): Promise<ObjectInfo | null> => {
    counts.head_calls++;
    metrics.headCalls.inc();
    try {
      return await env.objects().head(bucket, key);
    } catch (err) {
      if (err instanceof SvcError && err.code === "NoSuchKey") return null;
      throw err;
    }
  };
  const judge = async (pair: Pair) => {
    let { source: s, destination: d } = pair;
    if (s && d && !comparable(s.meta, d.meta)) {
      if (s.meta.sha256 === "") s = await head(scope.sourceBucket, pair.key);
      if (d.meta.sha256 === "") {
        d = await head(scope.destinationBucket, scope.toDestination(pair.key));
      }
    }
    if (s) add(totals.source, s);
    if (d) add(totals.destination, d);
    if (s && !d) note("missing", pair.key);
    else if (!s && d) note("extra", scope.toDestination(pair.key));
    else if (s && d) {
      if (sameContent(s.meta, d.meta)) counts.matching++;
      else note("differing", pair.key);
    }
  };
  const note = (kind: "missing" | "extra" | "differing", key: string) => {
    counts[kind]++;
    if (found[kind].length < LIST_CAP) found[kind].push(key);
  };
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const batch: Pair[] = [];
    while (batch.length < PAGE) {
      if (scanned >= maxObjects) {
        capped = (await source.peek()) !== null || (await destination.peek()) !== null;
        break;
      }
      const [s, d] = await Promise.all([source.peek(), destination.peek()]);
      if (s === null && d === null) break;
      const order = s === null ? 1 : d === null ? -1 : compareUtf8(s.rel, d.rel);
      const rel = order <= 0 ? s!.rel : d!.rel;
      const pair: Pair = {
        key: scope.sourcePrefix + rel,
        source: order <= 0 ? source.shift().info : null,
        destination: order >= 0 ? destination.shift().info : null,
      };
      if (scope.skipReason(pair.key) !== null) continue;
      scanned++;
      batch.push(pair);
    }
    if (batch.length === 0) break;
    await mapConcurrent(batch, headConcurrency, judge);
    if (capped) break;
  }
  return {
    rule: rule.name,
    in_parity: !capped && counts.missing === 0 && counts.extra === 0 && counts.differing === 0,
    capped,
    scanned,
    max_objects: maxObjects,
    source: totals.source,
    destination: totals.destination,
    ...counts,
    missing_keys: found.missing,
    extra_keys: found.extra,
    differing_keys: found.differing,
  };
}

function side(bucket: string, prefix: string): SideTotals {
  return { bucket, prefix, objects: 0, bytes: 0 };
}

function add(totals: SideTotals, info: ObjectInfo): void {
  totals.objects++;
  totals.bytes += info.meta.size;
}

/** Whether the two records carry a digest both sides know (no HEAD needed). */
function comparable(a: ObjectMeta, b: ObjectMeta): boolean {
  return a.size !== b.size || (a.sha256 !== "" && b.sha256 !== "");
}

function sameContent(a: ObjectMeta, b: ObjectMeta): boolean {
  if (a.size !== b.size) return false;
  if (a.sha256 && b.sha256) return a.sha256 === b.sha256;
  if (a.md5 && b.md5) return a.md5 === b.md5;
  return true;
}
