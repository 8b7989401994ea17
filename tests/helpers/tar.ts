/**
 * Realistic delta-store inputs for the black-box tests: a minimal ustar writer and "build
 * artifact" series whose versions differ the way consecutive releases do (a few changed blocks in
 * one member), so the tests exercise real deltas rather than identical or random payloads.
 */
import { randomBytes } from "./svc.ts";

export interface TarMember {
  name: string;
  data: Uint8Array;
}

const BLOCK = 512;
const utf8 = new TextEncoder();

/** Writes `value` as zero-padded octal filling `width - 1` digits plus a NUL, as ustar wants. */
function octal(header: Uint8Array, offset: number, width: number, value: number): void {
  const digits = value.toString(8).padStart(width - 1, "0");
  header.set(utf8.encode(digits), offset);
  header[offset + width - 1] = 0;
}

function header(name: string, size: number, mtime: number): Uint8Array {
  const bytes = utf8.encode(name);
  if (bytes.length > 100) throw new Error(`tar member name too long: ${name}`);
  const h = new Uint8Array(BLOCK);
  h.set(bytes, 0);
  octal(h, 100, 8, 0o644); // mode
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, size);
  octal(h, 136, 12, mtime);
  h[156] = 0x30; // typeflag '0': regular file
  h.set(utf8.encode("ustar\0"), 257);
  h.set(utf8.encode("00"), 263);
  // The checksum is computed with its own field read as eight spaces.
  h.fill(0x20, 148, 156);
  const sum = h.reduce((total, byte) => total + byte, 0);
  const digits = sum.toString(8).padStart(6, "0");
  h.set(utf8.encode(digits), 148);
  h[154] = 0;
  h[155] = 0x20;
  return h;
}

/** A complete ustar archive of `members` (fixed mtime, so equal inputs give equal bytes). */
export function tar(members: readonly TarMember[], mtime = 1_700_000_000): Uint8Array<ArrayBuffer> {
  const padded = (n: number) => Math.ceil(n / BLOCK) * BLOCK;
  const total = members.reduce((sum, m) => sum + BLOCK + padded(m.data.length), 0) + 2 * BLOCK;
  const out = new Uint8Array(total);
  let at = 0;
  for (const member of members) {
    out.set(header(member.name, member.data.length, mtime), at);
    at += BLOCK;
    out.set(member.data, at);
    at += padded(member.data.length);
  }
  return out; // the two trailing zero blocks are already zero
}

/**
 * A copy of `data` with about `fraction` of its bytes overwritten by random ones, in scattered
 * 256-byte runs (a patched build changes a few regions, not every byte).
 */
export function mutate(data: Uint8Array, fraction = 0.01): Uint8Array<ArrayBuffer> {
  const out = data.slice();
  const run = 256;
  const runs = Math.max(1, Math.round((data.length * fraction) / run));
  const stride = Math.floor(data.length / runs);
  for (let i = 0; i < runs; i++) {
    const start = i * stride + Math.floor(Math.random() * Math.max(1, stride - run));
    out.set(randomBytes(Math.min(run, data.length - start)), start);
  }
  return out;
}

/** A series of release artifacts: one member changes by ~1% from each version to the next. */
export class ArtifactSeries {
  #members: TarMember[];

  constructor(files = 4, fileSize = 256 * 1024) {
    this.#members = Array.from({ length: files }, (_, i) => ({
      name: `app/lib/part-${i}.bin`,
      data: randomBytes(fileSize),
    }));
    this.#members.push({ name: "app/VERSION", data: utf8.encode("1\n") });
  }

  /** The current version's archive. */
  current(): Uint8Array<ArrayBuffer> {
    return tar(this.#members);
  }

  /** Moves to the next version (one member patched, VERSION bumped) and returns its archive. */
  next(): Uint8Array<ArrayBuffer> {
    const which = Math.floor(Math.random() * (this.#members.length - 1));
    this.#members[which] = { ...this.#members[which], data: mutate(this.#members[which].data) };
    const version = this.#members.at(-1)!;
    const n = Number(new TextDecoder().decode(version.data).trim()) + 1;
    this.#members[this.#members.length - 1] = { ...version, data: utf8.encode(`${n}\n`) };
    return this.current();
  }
}
