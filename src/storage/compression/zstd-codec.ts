/**
 * zstd through node:zlib. Compression runs off the event loop (zlib's async form on its thread
 * pool) and only ever sees bytes svc was given, so it cannot fail on bad input. Decompression
 * uses the synchronous form on purpose: in the pinned Deno (2.9.5) a damaged frame given to the
 * async form or to a decompress stream throws an uncaught error that ends the process instead
 * of failing the call; the sync form throws where it is called. One frame (256 KiB) decodes in
 * about 0.5 ms of event-loop time.
 */
import zlib from "node:zlib";
import { Buffer } from "node:buffer";

/** The zstd part of node:zlib, which the pinned type definitions do not declare yet. */
interface ZstdZlib {
  constants: Record<string, number>;
  zstdCompress(
    input: Uint8Array,
    options: { params: Record<number, number> },
    done: (err: Error | null, out: Buffer) => void,
  ): void;
  zstdCompressSync(input: Uint8Array, options: { params: Record<number, number> }): Buffer;
  zstdDecompressSync(input: Uint8Array, options: { maxOutputLength: number }): Buffer;
}

const zstd = zlib as unknown as ZstdZlib;
const {
  ZSTD_c_compressionLevel,
  ZSTD_c_checksumFlag,
  ZSTD_c_contentSizeFlag,
  ZSTD_c_enableLongDistanceMatching,
  ZSTD_c_windowLog,
} = zstd.constants;
/** The largest window a long frame uses (16 MiB: what a decoder must hold, bounded). */
const MAX_LONG_WINDOW_LOG = 24;

/** A damaged or mismatching frame: the read answers 500, never the bytes. */
export class CompressionError extends Error {}

/**
 * One independent zstd frame of `plain` at `level`, with a content checksum. `long`: a window as
 * large as the frame (up to 16 MiB) with long-distance matching, for frames of several MiB whose
 * repeats lie far apart (a release tar holds the same file under several folders).
 */
export function compressFrame(plain: Uint8Array, level: number, long = false): Promise<Uint8Array> {
  const params: Record<number, number> = {
    [ZSTD_c_compressionLevel]: level,
    [ZSTD_c_checksumFlag]: 1,
    [ZSTD_c_contentSizeFlag]: 1,
  };
  if (long) {
    const windowLog = Math.ceil(Math.log2(Math.max(plain.length, 1024)));
    params[ZSTD_c_windowLog] = Math.min(MAX_LONG_WINDOW_LOG, windowLog);
    params[ZSTD_c_enableLongDistanceMatching] = 1;
  }
  return new Promise((resolve, reject) => {
    zstd.zstdCompress(
      plain,
      { params },
      (err: Error | null, out: Buffer) => err ? reject(err) : resolve(out),
    );
  });
}

/** How much of `sample` a fast zstd pass saves (0.25: a quarter), to decide whether to compress. */
export function sampleSavings(sample: Uint8Array): number {
  if (sample.length === 0) return 0;
  const out = zstd.zstdCompressSync(sample, { params: { [ZSTD_c_compressionLevel]: 1 } });
  return 1 - out.length / sample.length;
}

/**
 * The `expected` bytes frame `stored` decodes to. CompressionError when it does not decode
 * (checksum, truncation, garbage) or decodes to another length.
 */
export function decompressFrame(stored: Uint8Array, expected: number, what: string): Uint8Array {
  let out: Buffer;
  try {
    out = zstd.zstdDecompressSync(stored, { maxOutputLength: Math.max(1, expected) });
  } catch (err) {
    throw new CompressionError(
      `Compressed object ${what} is damaged: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (out.length !== expected) {
    throw new CompressionError(
      `Compressed object ${what} is damaged: decodes to ${out.length} bytes, expected ${expected}`,
    );
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}
