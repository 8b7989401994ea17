/**
 * Expansion and contraction, file to file (the worker runs them; predicted streams' chunks also
 * run on helper threads, model-threads.ts). See docs/DELTA.md,
 * "Archive token form", for the format.
 */
import { createHash } from "node:crypto";
import {
  ByteSink,
  ByteSource,
  formatProblem,
  hashingSink,
  isFormatProblem,
  truncated,
} from "./byte-io.ts";
import { walkGzip } from "./walk/gzip-walk.ts";
import { RawRecords } from "./walk/raw-records.ts";
import { contractDeflate, readVarint } from "./token-contract.ts";
import { FORMAT_BYTE, MAGIC, TAG_DEFLATE, TAG_END, TAG_RAW, VERSION } from "./token-format.ts";
import { walkZip } from "./walk/zip-walk.ts";
import { formVersion, predictForm, VERSION_PREDICTED } from "./predicted-form.ts";
import { contractPredictedForm, endOfContraction } from "./form-contract.ts";
import { readHeader } from "./form-rewrite.ts";
import { type MemoStream, type RecordSpan, spanDigests, type StreamMemo } from "./stream-memo.ts";

/** Ends the deflate model's helper threads (a script calling this module directly, at its end). */
export { stopModelThreads } from "./model/model-threads.ts";

export type ArchiveFormat = "gzip" | "zip";

export type ExpandResult =
  | {
    ok: true;
    expandedSize: number;
    deflateStreams: number;
    /** Each predicted record's digest and its stream's place in the archive (stream-memo.ts). */
    streams?: MemoStream[];
  }
  | { ok: false; reason: string };

/** Size and hex sha256 of a whole file (read in 1 MiB parts). */
function digestFile(path: string): { size: number; sha256: string } {
  const hash = createHash("sha256");
  const buf = new Uint8Array(1 << 20);
  let size = 0;
  using file = Deno.openSync(path);
  for (;;) {
    const n = file.readSync(buf);
    if (n === null) break;
    hash.update(buf.subarray(0, n));
    size += n;
  }
  return { size, sha256: hash.digest("hex") };
}

/**
 * The token form of the archive at `inPath`, written to `outPath`: version 1 (tokens), then
 * version 2 where the deflate model predicts a stream (predicted-form.ts).
 */
export async function expandFile(
  format: ArchiveFormat,
  inPath: string,
  outPath: string,
): Promise<ExpandResult> {
  const tokensPath = `${outPath}.tokens`;
  try {
    const ranges: number[] = [];
    const result = expandTokensSync(format, inPath, tokensPath, ranges);
    if (!result.ok || result.deflateStreams === 0) {
      Deno.renameSync(tokensPath, outPath);
      return result;
    }
    const spans: RecordSpan[] = [];
    const predicted = await predictForm(tokensPath, outPath, spans);
    if (predicted.predicted === 0) {
      Deno.renameSync(tokensPath, outPath);
      return result;
    }
    const streams = spanDigests(outPath, spans, ranges);
    return { ...result, expandedSize: predicted.size, streams };
  } finally {
    try {
      Deno.removeSync(tokensPath);
    } catch { /* renamed, or never written */ }
  }
}

function expandTokensSync(
  format: ArchiveFormat,
  inPath: string,
  outPath: string,
  ranges: number[],
): ExpandResult {
  const original = digestFile(inPath);
  using input = Deno.openSync(inPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  const src = new ByteSource(input);
  const out = new ByteSink(output);
  const raw = new RawRecords(out);
  out.bytes(MAGIC);
  out.byte(VERSION);
  out.byte(FORMAT_BYTE[format]);
  let deflateStreams: number;
  try {
    deflateStreams = format === "gzip"
      ? walkGzip(src, out, raw, ranges)
      : walkZip(src, out, raw, ranges);
  } catch (err) {
    if (isFormatProblem(err)) return { ok: false, reason: err.message };
    throw err;
  }
  raw.flush();
  if (src.offset !== original.size) {
    return { ok: false, reason: `The input changed while it was read (${inPath})` };
  }
  out.byte(TAG_END);
  out.varint(original.size);
  out.bytes(hexBytes(original.sha256));
  out.flush();
  return { ok: true, expandedSize: out.size, deflateStreams };
}

function hexBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * Rebuilds the archive the form at `expandedPath` describes into `outPath`, checked against the
 * size and sha256 it records; with a `memo`, predicted records it knows are copied from there.
 */
export async function contractFile(
  expandedPath: string,
  outPath: string,
  memo?: StreamMemo,
): Promise<{ size: number; sha256: string; copied: number }> {
  if (formVersion(expandedPath) !== VERSION_PREDICTED) {
    return { ...contractTokensSync(expandedPath, outPath), copied: 0 };
  }
  return await contractPredictedForm(expandedPath, outPath, memo);
}

function contractTokensSync(expandedPath: string, outPath: string): {
  size: number;
  sha256: string;
} {
  using input = Deno.openSync(expandedPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  const src = new ByteSource(input);
  const { out, digest } = hashingSink(output);
  const head = readHeader(src, expandedPath);
  if (head[4] !== VERSION) throw formatProblem(`Unknown token form version ${head[4]}`);
  for (;;) {
    const tag = src.byte();
    if (tag === TAG_RAW) {
      let left = readVarint(src);
      while (left > 0) {
        const part = src.chunk(left);
        if (part.length === 0) throw truncated("a RAW record");
        out.bytes(part);
        left -= part.length;
      }
    } else if (tag === TAG_DEFLATE) {
      contractDeflate(src, out);
    } else if (tag === TAG_END) {
      return endOfContraction(src, out, digest);
    } else {
      throw formatProblem(`The token form has an unknown record tag ${tag}`);
    }
  }
}
