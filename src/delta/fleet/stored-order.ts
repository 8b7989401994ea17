/**
 * Which of a key's two stored names (`x` passthrough, `x.delta`) holds its newer write, when both
 * exist: an overwrite that changed form, before the older name was removed, or two svc instances
 * writing the key at once (docs/DELTA.md "Several instances over one backend"). Every reader and
 * every writer decides with this one rule, from the two HEADs alone, so they all agree on it.
 *
 * The backend's Last-Modified decides to the second (an S3 backend reports no finer), then the
 * writer's `writtenAt` stamp (ms, stored with the object; clocks of a fleet's instances are
 * assumed in sync well below a second), then the passthrough name wins a tie.
 *
 * The rule needs each name's history to only get newer: a commit that replaces an object under
 * one name must be newer than it. A stamp taken before a commit does not ensure that (another
 * instance's commit may land between the two), so a write replaces exactly the object it HEADed
 * (`If-Match`, `If-None-Match: *` for none) with a stamp after that object's
 * (ordered-commit.ts, for every write of the key), and looks again when the condition fails.
 *
 * An object stored again later for the same write (a background archive conversion,
 * background/archive-convert.ts) keeps that write's place: its metadata carries the write's
 * Last-Modified (`sourceLastModified`) and `writtenAt`, which order it instead of its own commit, so a write
 * that came after the original stays newer than the conversion whenever the conversion lands.
 * A converted delta and the passthrough copy it was made from tie; the delta wins (it replaces it).
 */

import type { ObjectInfo } from "../../storage/mod.ts";
import type { DeltaMeta } from "../delta-context.ts";
import { logicalKeyOf, sourceTimeOf } from "../layout.ts";

/** The writer's stamp of a stored object, its Last-Modified when it has none (older writes). */
export function writtenAtOf(info: ObjectInfo): number {
  const { writtenAt } = info.meta as DeltaMeta;
  const stamp = writtenAt === undefined ? NaN : Number(writtenAt);
  return Number.isFinite(stamp) ? stamp : info.meta.lastModified;
}

/** The stamp a write stores with its stored object: now, in ms. */
export function writtenAtNow(): string {
  return String(Date.now());
}

/**
 * The stamp of a commit that replaces `previous` under the same name (with `If-Match` on it):
 * now, and always after the replaced one's, so each name's history only ever gets newer.
 */
export function stampAfter(previous: ObjectInfo | null): string {
  return String(Math.max(Date.now(), previous ? writtenAtOf(previous) + 1 : 0));
}

/** A tie's order: a converted delta, then the passthrough name, then a delta written as one. */
function tieRank(info: ObjectInfo): number {
  if (logicalKeyOf(info.key) === info.key) return 1;
  return (info.meta as DeltaMeta).sourceLastModified === undefined ? 0 : 2;
}

/** Whether the stored object `a` holds a newer write than `b`, the other stored name of its key. */
export function isNewerStored(a: ObjectInfo, b: ObjectInfo): boolean {
  const secondA = Math.floor(sourceTimeOf(a) / 1000);
  const secondB = Math.floor(sourceTimeOf(b) / 1000);
  if (secondA !== secondB) return secondA > secondB;
  const stampA = writtenAtOf(a);
  const stampB = writtenAtOf(b);
  if (stampA !== stampB) return stampA > stampB;
  return tieRank(a) > tieRank(b);
}

/** The newer of a key's passthrough and delta stored objects (either may be null). */
export function newerStored(plain: ObjectInfo | null, delta: ObjectInfo | null): ObjectInfo | null {
  if (plain && delta) return isNewerStored(delta, plain) ? delta : plain;
  return plain ?? delta;
}
