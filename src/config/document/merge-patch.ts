/**
 * RFC 7396 JSON Merge Patch: the body of `PUT /config` and `PUT /config/section/:name`.
 *
 * - a patch that is not an object (scalar, array, null) replaces the target outright;
 * - otherwise every member of the patch is applied to the target object: `null` deletes the
 *   member, an object merges recursively (into `{}` when the target member is not an object),
 *   anything else (scalars, arrays) replaces it; members the patch does not name are kept.
 *
 * Inputs are never modified; the result shares no mutable structure with the patch, so a caller
 * may edit it freely.
 */
import { isPlainObject as isObject } from "../../lib/mod.ts";

/** A deep copy of plain JSON data (objects, arrays, scalars). */
function cloneJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cloneJson);
  if (isObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) out[key] = cloneJson(member);
    return out;
  }
  return value;
}

/** The target with the patch applied (RFC 7396 section 2, MergePatch). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return cloneJson(patch);
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
