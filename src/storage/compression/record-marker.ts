/**
 * The `compression` field of a stored record (zstd-format.ts) as the layers above must not see
 * it: the logical size and md5 back in place, the marker gone.
 */
import { SvcError } from "../../lib/mod.ts";
import type { ObjectInfo, ObjectMeta } from "../backend.ts";
import {
  type CompressionMarker,
  frameCountOf,
  parseMarker,
  storedLengthOf,
} from "./zstd-format.ts";

/** A compressed object's marker; InternalError when the record holds one svc cannot read. */
export function markerOf(info: ObjectInfo): CompressionMarker {
  try {
    const marker = parseMarker(info.meta.compression!);
    if (info.meta.size !== storedLengthOf(marker)) {
      throw new Error(
        `its record says ${info.meta.size} stored bytes, its marker ${storedLengthOf(marker)}`,
      );
    }
    if (frameCountOf(marker) > 0 && marker.indexOffset === 0) throw new Error("no frame data");
    return marker;
  } catch (err) {
    throw new SvcError(
      "InternalError",
      `Compressed object "${info.key}" has a damaged record: ${
        err instanceof Error ? err.message : String(err)
      }`,
    );
  }
}

export function withoutMarker(meta: ObjectMeta): ObjectMeta {
  const { compression: _drop, ...rest } = meta;
  return rest;
}

/** The logical record of a stored one: the marker's size and md5, without the marker. */
export function unmarkedMeta(meta: ObjectMeta): ObjectMeta {
  if (meta.compression === undefined) return meta;
  const marker = parseMarker(meta.compression);
  return { ...withoutMarker(meta), size: marker.size, md5: marker.md5 };
}

/** `info` as the layers above see it: logical size and md5, no marker. */
export function unmarked<T extends ObjectInfo | null>(info: T): T {
  if (!info || info.meta.compression === undefined) return info;
  markerOf(info);
  return { ...info, meta: unmarkedMeta(info.meta) };
}
