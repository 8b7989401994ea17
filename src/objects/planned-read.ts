/**
 * Opening an object for a read that depends on its metadata (conditionals, ranges, copy-source
 * checks). The caller's `plan` judges a version and says which bytes it wants; what is opened is
 * always the version that was judged, so a concurrent overwrite never fails a read or mixes
 * versions.
 *
 * Fast path, the common whole-object read: open once and judge the version opened, so metadata is
 * read once. The backend runs the judgement before expensive work (a delta is rebuilt only once it
 * passes: a 304 costs no decode). A plan that wants a range stops that open; the planned path then
 * heads, judges and opens exactly that range, retrying when the object was replaced in between.
 */
import { SvcError } from "../lib/mod.ts";
import type { Backend, ByteRange, ObjectBody, ObjectInfo } from "../storage/mod.ts";

/** Opens retried when the object is replaced between its HEAD and the open. */
const OPEN_ATTEMPTS = 5;

/** The object changed between planning a read and opening it; the caller should re-plan. */
export class ObjectChangedError extends Error {
  constructor() {
    super("Object changed while it was being read");
    this.name = "ObjectChangedError";
  }
}

/** Thrown by the fast-path judgement when the plan wants a range: take the planned open. */
class RangedPlan extends Error {}

export interface PlannedReader {
  readonly backend: Backend;
  /** The object's info; NoSuchKey when absent. */
  head(bucket: string, key: string): Promise<ObjectInfo>;
  /** Opens `range` of the object, ObjectChangedError when its ETag is no longer `expectedEtag`. */
  get(bucket: string, key: string, range?: ByteRange, expectedEtag?: string): Promise<ObjectBody>;
}

export type ReadPlan = (info: ObjectInfo) => ByteRange | undefined;

export async function openPlannedRead(
  reader: PlannedReader,
  bucket: string,
  key: string,
  plan: ReadPlan,
): Promise<ObjectBody & { range?: ByteRange }> {
  let judged = false;
  const judge = (info: ObjectInfo) => {
    judged = true;
    if (plan(info) !== undefined) throw new RangedPlan();
  };
  let whole: ObjectBody | null;
  try {
    whole = await reader.backend.getObject(bucket, key, undefined, judge);
  } catch (err) {
    if (!(err instanceof RangedPlan)) throw err;
    whole = null;
  }
  if (whole !== null && !judged) {
    // The backend did not judge (it had nothing expensive to avoid): judge here.
    try {
      judge(whole.info);
    } catch (err) {
      await whole.body.cancel();
      if (!(err instanceof RangedPlan)) throw err;
      whole = null;
    }
  }
  if (whole !== null) return whole;
  for (let attempt = 1;; attempt++) {
    const info = await reader.head(bucket, key); // NoSuchKey when it is (still) absent
    const range = plan(info);
    try {
      return { ...await reader.get(bucket, key, range, info.meta.etag), range };
    } catch (err) {
      if (!(err instanceof ObjectChangedError)) throw err;
      if (attempt >= OPEN_ATTEMPTS) {
        throw new SvcError("SlowDown", `Object "${key}" is being replaced too often to be read`);
      }
    }
  }
}
