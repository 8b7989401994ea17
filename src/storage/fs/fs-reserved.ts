/**
 * The two entry names the filesystem backend reserves inside key directories (see
 * fs-nesting.ts). No client key may have them as a segment, so they never collide with a key.
 */

/** The object named like its directory: key `k` stored as `k/.svc-object`. */
export const OBJECT_ENTRY = ".svc-object";
/** A directory marker with a body: key `k/` stored as `k/.svc-marker`. */
export const MARKER_ENTRY = ".svc-marker";

export function isReservedEntry(name: string): boolean {
  return name === OBJECT_ENTRY || name === MARKER_ENTRY;
}
