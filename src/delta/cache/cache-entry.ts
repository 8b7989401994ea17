/**
 * Hashing of the delta caches' files: the whole-file sha256 (the content address) and one seal
 * per chunk (`chunkStart`), taken in the same pass when an entry is created. The chunk digests stay
 * in memory beside the entry (the caches are emptied at start, so nothing on disk needs them and
 * nothing on disk can forge them); every read of a cached file checks the chunks it touches before
 * their bytes are used (verified-file.ts). Also the leases reference-cache.ts hands out.
 */

import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { type ChunkMac, createChunkMac } from "../../native/mod.ts";

/** Verification granule: a ranged read re-hashes at most one chunk more at each end. */
export const CHUNK_BYTES = 1 << 20;
/**
 * The first chunks are smaller and grow (128, 256 and 512 KiB, then CHUNK_BYTES): a read sends
 * nothing before its first chunk is checked, and a small first chunk starts the response sooner
 * (a 1 MiB one took ~0.45 ms to read and check, a tenth of a 4 MiB read), while the next,
 * larger ones are checked as it is sent. Whole 1 MiB chunks from 896 KiB on keep per-chunk costs
 * low on large objects.
 */
const FIRST_CHUNK = 128 << 10;
const GROWING = 3;
const GROWN = FIRST_CHUNK * ((1 << GROWING) - 1);

/** Where chunk `index` starts. */
export function chunkStart(index: number): number {
  return index < GROWING
    ? FIRST_CHUNK * ((1 << index) - 1)
    : GROWN + (index - GROWING) * CHUNK_BYTES;
}

/** How long chunk `index` is (the last chunk of a file may be shorter). */
export function chunkLength(index: number): number {
  return index < GROWING ? FIRST_CHUNK << index : CHUNK_BYTES;
}

/** The chunk that holds byte `offset`. */
export function chunkAt(offset: number): number {
  if (offset >= GROWN) return GROWING + Math.floor((offset - GROWN) / CHUNK_BYTES);
  let index = 0;
  while (chunkStart(index + 1) <= offset) index++;
  return index;
}

export interface FileDigests {
  /** sha256 of the whole content, hex. */
  sha256: string;
  size: number;
  /** The seal of each chunk (`chunkStart`, `chunkLength`; the last may be shorter). */
  chunks: Uint8Array[];
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * How a cached chunk is sealed and checked: AES-256-GMAC under a key only this process holds
 * (native/libcrypto/chunk-mac.ts: ~6x cheaper than SHA-256, so a verified warm read stays close to
 * a plain one), or SHA-256 where libcrypto is missing. Either way the seal stays in memory.
 */
export interface ChunkCheck {
  /** Seals a chunk that arrives in parts. */
  begin(): { update(bytes: Uint8Array): void; finish(): Uint8Array };
  seal(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array>;
  matches(bytes: Uint8Array<ArrayBuffer>, sealed: Uint8Array): Promise<boolean>;
}

/** SHA-256 per chunk (`subtle.digest` runs on Deno's blocking pool, off the JS thread). */
export const SHA256_CHECK: ChunkCheck = {
  begin() {
    const hash = createHash("sha256");
    return {
      update: (bytes) => void hash.update(bytes),
      finish: () => new Uint8Array(hash.digest()),
    };
  },
  async seal(bytes) {
    return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  },
  async matches(bytes, sealed) {
    return Buffer.from(sealed).equals(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
  },
};

/** The check through a chunk MAC. */
export function macCheck(mac: ChunkMac): ChunkCheck {
  return {
    begin: () => mac.begin(),
    seal(bytes) {
      const sealing = mac.begin();
      sealing.update(bytes);
      return Promise.resolve(sealing.finish());
    },
    matches: (bytes, sealed) => Promise.resolve(mac.matches(bytes, sealed)),
  };
}

const processMac = createChunkMac();
/** This process's check: the MAC where libcrypto has it, else SHA-256. */
export const PROCESS_CHUNK_CHECK: ChunkCheck = processMac ? macCheck(processMac) : SHA256_CHECK;

/** Hashes bytes as they go by: sha256 of the whole, and each chunk sealed. */
export class ChunkHasher {
  readonly #whole = createHash("sha256");
  readonly #chunks: Uint8Array[] = [];
  readonly #check: ChunkCheck;
  #chunk: ReturnType<ChunkCheck["begin"]>;
  #filled = 0;
  #size = 0;

  constructor(check: ChunkCheck = PROCESS_CHUNK_CHECK) {
    this.#check = check;
    this.#chunk = check.begin();
  }

  update(bytes: Uint8Array): void {
    this.#whole.update(bytes);
    this.#size += bytes.byteLength;
    let at = 0;
    while (at < bytes.byteLength) {
      const length = chunkLength(this.#chunks.length);
      const take = Math.min(length - this.#filled, bytes.byteLength - at);
      this.#chunk.update(bytes.subarray(at, at + take));
      at += take;
      this.#filled += take;
      if (this.#filled === length) {
        this.#chunks.push(this.#chunk.finish());
        this.#chunk = this.#check.begin();
        this.#filled = 0;
      }
    }
  }

  finish(): FileDigests {
    if (this.#filled > 0) this.#chunks.push(this.#chunk.finish());
    return { sha256: this.#whole.digest("hex"), size: this.#size, chunks: this.#chunks };
  }
}

/** Reads into `buffer` until it is full or the file ends; answers the bytes read. */
export async function readFull(file: Deno.FsFile, buffer: Uint8Array): Promise<number> {
  let filled = 0;
  while (filled < buffer.length) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return filled;
}

/**
 * The digests of a file's bytes; rejects with the signal's reason when it fires. The whole-file
 * hash runs here while the previous chunk's digest runs on the pool (one chunk in flight).
 */
export async function digestFile(
  path: string,
  signal?: AbortSignal,
  check: ChunkCheck = PROCESS_CHUNK_CHECK,
): Promise<FileDigests> {
  using file = await Deno.open(path, { read: true });
  const whole = createHash("sha256");
  const chunks: Uint8Array[] = [];
  let size = 0;
  let inFlight = Promise.resolve();
  for (;;) {
    signal?.throwIfAborted();
    const index = chunks.length;
    const buffer = new Uint8Array(chunkLength(index));
    const n = await readFull(file, buffer);
    if (n === 0) break;
    const bytes = buffer.subarray(0, n);
    chunks.push(new Uint8Array(0));
    await inFlight;
    inFlight = check.seal(bytes).then((digest) => {
      chunks[index] = digest;
    });
    whole.update(bytes);
    size += n;
    if (n < buffer.length) break;
  }
  await inFlight;
  return { sha256: whole.digest("hex"), size, chunks };
}

/**
 * What is wrong with a file against its chunk digests (undefined: nothing), reading it chunk by
 * chunk with the next chunk's digest running beside this one's read. Rejects when the signal fires.
 */
export async function findDamage(
  path: string,
  chunks: readonly Uint8Array[],
  signal?: AbortSignal,
  check: ChunkCheck = PROCESS_CHUNK_CHECK,
): Promise<string | undefined> {
  using file = await Deno.open(path, { read: true });
  let checking: Promise<string | undefined> = Promise.resolve(undefined);
  for (let index = 0;; index++) {
    signal?.throwIfAborted();
    const buffer = new Uint8Array(chunkLength(index));
    const n = await readFull(file, buffer);
    const damage = await checking;
    if (damage !== undefined) return damage;
    if (n === 0) return index === chunks.length ? undefined : `ends before chunk ${index}`;
    const expected = chunks[index];
    if (expected === undefined) return `longer than its ${chunks.length} chunks`;
    checking = check.matches(buffer.subarray(0, n), expected).then((same) =>
      same ? undefined : `chunk ${index} is damaged`
    );
    if (n < buffer.length) {
      return (await checking) ?? (index + 1 === chunks.length ? undefined : "is short");
    }
  }
}

/**
 * A baseline file a codec may read until `release()` (idempotent; resolves once a file that had to
 * go with this lease is gone).
 */
export interface BaselineLease {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
  /** Found in the cache (the `x-svc-cache: hit` of debug headers). */
  readonly cacheHit: boolean;
  /** Hashed while this acquisition downloaded it: `verify` answers true without reading. */
  readonly verified: boolean;
  /** The seal of each chunk, taken when the file was filled: readers check against them. */
  readonly chunks: readonly Uint8Array[];
  release(): Promise<void>;
}

export type BaselineAcquired = BaselineLease | { corrupt: true };

/** What a fill made: its digests, and whether the bytes may stay on disk. */
export type Filled = FileDigests & { persist: boolean };

/** A fetched baseline: its bytes and whether they may stay on disk (default true). */
export type Fetched = ReadableStream<Uint8Array> | {
  body: ReadableStream<Uint8Array>;
  persist: boolean;
};
