/**
 * One commit under a key's stored name (`x` or `x.delta` in a compressed bucket) that replaces
 * exactly the object HEADed first, stamped after it (stored-order.ts: each name's history only
 * gets newer). Several svc instances may commit under the name at once: a failed condition means
 * another write landed in between, and the writer HEADs again and retries with the same bytes.
 *
 * A key written so busily that the condition keeps failing is not committed unconditionally
 * (that could put an older-stamped object in place of a newer one, and reads and cleanups would
 * then keep an acknowledged write's predecessor): the writer backs off (20 ms doubling to 500 ms,
 * with jitter) and after ORDERED_DEADLINE_MS answers 503 SlowDown, which S3 clients retry. The
 * write is never acknowledged as "overwritten" instead: the write that beat it may carry an
 * older stamp than one acknowledged before this write began, so dropping it could serve that
 * one after this write's answer (docs/DELTA.md "Several instances over one backend").
 */

import { SvcError } from "../../lib/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import type {
  Backend,
  ObjectInfo,
  ObjectMeta,
  StagedObject,
  WriteCondition,
} from "../../storage/mod.ts";
import { isNewerStored, stampAfter, writtenAtNow, writtenAtOf } from "./stored-order.ts";

const log = getLogger("svc::delta");

/** How long a write keeps retrying a commit whose condition keeps failing before SlowDown. */
export const ORDERED_DEADLINE_MS = 10_000;
const FIRST_PAUSE_MS = 20;
const MAX_PAUSE_MS = 500;

/** Commits the writer's bytes under the stored name with `meta` and `condition`. */
export type Commit = (meta: ObjectMeta, condition?: WriteCondition) => Promise<ObjectInfo>;

export interface OrderedOptions {
  /** Overrides ORDERED_DEADLINE_MS (tests). */
  deadlineMs?: number;
  /** The commit stores an existing write again (its stamp, not a new one): see SameWrite. */
  sameWrite?: SameWrite;
}

/**
 * A write stored again under the other stored name (a background archive conversion,
 * background/archive-convert.ts): `source` is the stored object it was made from. The commit
 * carries the source's stamp (stored-order.ts), and replaces only an object older than the source: a newer
 * write under the name fails it with PreconditionFailed, for good.
 */
export interface SameWrite {
  source: ObjectInfo;
  /** Asked right before each commit: false (the source was deleted meanwhile) refuses it. */
  stillStored?: () => Promise<boolean>;
}

/** The pause before attempt `attempt + 1`: doubling from FIRST_PAUSE_MS, capped, with jitter. */
export function pauseAfter(attempt: number): number {
  const base = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (attempt - 1));
  return Math.round(base / 2 + Math.random() * base / 2);
}

/**
 * Commits under `name` (see the header) and returns the stored info and the object it replaced.
 * `commit` may be called several times: a fresh staged copy each time, or one staged object
 * whose refused commit left its bytes (StagedObject.commit). A backend without version tokens
 * gets an unconditional commit over an existing object, as before.
 */
export async function commitOrdered(
  inner: Pick<Backend, "headObject">,
  bucket: string,
  name: string,
  meta: ObjectMeta,
  commit: Commit,
  options: OrderedOptions = {},
): Promise<{ info: ObjectInfo; previous: ObjectInfo | null }> {
  const deadline = Date.now() + (options.deadlineMs ?? ORDERED_DEADLINE_MS);
  for (let attempt = 1;; attempt++) {
    const previous = await inner.headObject(bucket, name);
    const { sameWrite } = options;
    if (sameWrite && previous && !isNewerStored(sameWrite.source, previous)) {
      throw new SvcError("PreconditionFailed", `"${name}" holds a newer write than its source`);
    }
    if (sameWrite?.stillStored && !(await sameWrite.stillStored())) {
      throw new SvcError("PreconditionFailed", `The source of "${name}" is no longer stored`);
    }
    const writtenAt = sameWrite ? String(writtenAtOf(sameWrite.source)) : stampAfter(previous);
    const stamped = { ...meta, writtenAt } as ObjectMeta;
    const condition: WriteCondition | undefined = previous === null
      ? { ifNoneMatch: true }
      : previous.version === undefined
      ? undefined
      : { ifMatch: previous.version };
    try {
      return { info: await commit(stamped, condition), previous };
    } catch (err) {
      const refused = err instanceof SvcError && err.code === "PreconditionFailed";
      if (!condition || !refused) throw err;
    }
    const pause = pauseAfter(attempt);
    if (Date.now() + pause > deadline) {
      log.warn("A write gave up: its stored name kept changing under its conditional commits", {
        bucket,
        name,
        attempts: attempt,
      });
      throw new SvcError(
        "SlowDown",
        `Write of "${name}" not committed: it changed under ${attempt} conditional commits; retry`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * A body staged straight into the inner backend (too large for a delta, or no codec: no spool of
 * the delta store) committed as `key`'s passthrough name. A key whose name can also be stored as
 * `key.delta` is committed ordered like any other write of it, retrying the one staged object
 * (the body streams once); a key never stored as a delta has one stored name, which the
 * backend's own last-commit-wins orders, so it commits at once with a fresh stamp.
 */
export async function commitStreamed(
  inner: Pick<Backend, "headObject">,
  bucket: string,
  key: string,
  staged: StagedObject,
  meta: ObjectMeta,
  deltaName: boolean,
): Promise<ObjectInfo> {
  if (!deltaName) return await staged.commit({ ...meta, writtenAt: writtenAtNow() } as ObjectMeta);
  const commit: Commit = (stamped, condition) => staged.commit(stamped, condition);
  return (await commitOrdered(inner, bucket, key, meta, commit)).info;
}
