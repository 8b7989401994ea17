/**
 * The scrub's checks of artifacts against each other (one HEAD each, no bytes read): a group
 * marker must have its delta, in its group; a key stored both as `x` and `x.delta` has an older
 * copy that listings never show (the newer one wins), named as the orphan.
 */
import type { ObjectInfo } from "../../storage/mod.ts";
import { isNewerStored } from "../../delta/mod.ts";
import type { RawBackend } from "./object-checks.ts";
import type { FindingKind } from "./scrub-state.ts";
import { deltaDeltaspace, markerKeyOf, recordedMarkerKey } from "./stored-names.ts";

export interface ArtifactFinding {
  key: string;
  storedName: string;
  kind: FindingKind;
  detail: string;
}

/** The finding of the marker `info` of `deltaspace`, or null when its delta is there. */
export async function markerFinding(
  raw: RawBackend,
  bucket: string,
  info: ObjectInfo,
  deltaspace: string,
): Promise<ArtifactFinding | null> {
  const at = (kind: FindingKind, detail: string) => ({
    key: info.key,
    storedName: info.key,
    kind,
    detail,
  });
  if (recordedMarkerKey(info) === undefined) {
    // Listed without its metadata (an S3 backend): the key it names is in its own record.
    try {
      const full = await raw.headObject(bucket, info.key);
      if (full === null) return null; // removed since the listing
      info = full;
    } catch (err) {
      return at("unreadable", err instanceof Error ? err.message : String(err));
    }
  }
  const key = markerKeyOf(info);
  let delta: ObjectInfo | null;
  try {
    delta = await raw.headObject(bucket, `${key}.delta`);
  } catch (err) {
    return at("unreadable", err instanceof Error ? err.message : String(err));
  }
  if (delta === null) return at("orphan_marker", `Its delta ${key}.delta is gone`);
  const now = deltaDeltaspace(delta, key);
  if (now === deltaspace) return null;
  return at("orphan_marker", `Its delta ${key}.delta now belongs to ${now}`);
}

/** The older copy of a key also stored as the delta `delta`, or null. */
export async function shadowFinding(
  raw: RawBackend,
  bucket: string,
  key: string,
  delta: ObjectInfo,
): Promise<ArtifactFinding | null> {
  let plain: ObjectInfo | null;
  try {
    plain = await raw.headObject(bucket, key);
  } catch {
    return null; // the passthrough check of `key` reports a backend failure
  }
  if (plain === null) return null;
  if (!isNewerStored(delta, plain)) {
    return {
      key,
      storedName: delta.key,
      kind: "stale_delta",
      detail: `Older than the passthrough copy ${key}`,
    };
  }
  return {
    key,
    storedName: key,
    kind: "stale_passthrough",
    detail: `Older than the delta ${delta.key}`,
  };
}
