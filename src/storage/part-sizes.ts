/**
 * The run-length form of `ObjectMeta.partSizes`: `size*count` runs joined by commas
 * (`8388608*639,1234`). Read by the object layer (`?partNumber` reads, objects/part-layout.ts) and
 * by the filesystem backend (locating a range in a multipart object's extents).
 */

/** Longest layout recorded; beyond it (sizes varying part to part) none is kept. */
export const MAX_LAYOUT_CHARS = 1024;

/** The run-length layout of these part sizes, or undefined when it would be too long. */
export function encodePartSizes(sizes: number[]): string | undefined {
  const runs: string[] = [];
  for (let i = 0; i < sizes.length;) {
    let j = i + 1;
    while (j < sizes.length && sizes[j] === sizes[i]) j++;
    runs.push(j - i === 1 ? String(sizes[i]) : `${sizes[i]}*${j - i}`);
    i = j;
  }
  const text = runs.join(",");
  return text.length <= MAX_LAYOUT_CHARS ? text : undefined;
}

/** The part sizes of a layout; null when it does not parse (never trusted half-read). */
export function decodePartSizes(layout: string): number[] | null {
  const sizes: number[] = [];
  for (const run of layout.split(",")) {
    const match = /^(\d{1,16})(?:\*(\d{1,5}))?$/.exec(run);
    if (!match) return null;
    const count = match[2] === undefined ? 1 : Number(match[2]);
    if (count < 1 || sizes.length + count > 10_000) return null;
    for (let i = 0; i < count; i++) sizes.push(Number(match[1]));
  }
  return sizes;
}
