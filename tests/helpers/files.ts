import { randomBytes } from "./svc.ts";

/** Every file under `dir`, recursively, sorted: what a test searches for leaks or checks modes of. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...filesUnder(path));
    else if (entry.isFile) out.push(path);
  }
  return out.sort();
}

/** `size` random bytes with `marker` written every 4 KiB, so any plaintext copy of them shows it. */
export function markedBytes(size: number, marker: string): Uint8Array<ArrayBuffer> {
  const bytes = randomBytes(size);
  const encoded = new TextEncoder().encode(marker);
  for (let at = 0; at + encoded.length <= size; at += 4096) bytes.set(encoded, at);
  return bytes;
}
