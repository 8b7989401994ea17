/**
 * Token form version 2: version 1 with each deflate stream the deflate model reproduces stored
 * as a predicted record (predicted-record.ts) instead of its tokens. Expansion writes version 1
 * and then this pass; contraction undoes it first, so the Huffman re-packing (token-contract.ts)
 * only ever reads version 1. A stream the model does not describe (too many corrections, a
 * stored block, content over PREDICT_MAX_CONTENT) keeps its `D` record: version 2 may hold both.
 *
 * Memory: one stream's content and tokens at a time (at most PREDICT_MAX_CONTENT bytes of
 * content, ~3x that in all), whatever the archive's size.
 */
import { ByteSink, ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { MODEL_PARAMS } from "./deflate-model.ts";
import {
  codes258As284,
  type Correction,
  corrections,
  readPredicted,
  TAG_PREDICTED,
  writePredicted,
} from "./predicted-record.ts";
import { readVarint } from "./token-contract.ts";
import { MAGIC, TAG_DEFLATE, TAG_END, TAG_RAW, VERSION } from "./token-format.ts";
import { readTokenStream, writeTokenStream } from "./token-stream.ts";

export const VERSION_PREDICTED = 2;
/** Largest stream content modelled (bigger streams keep their tokens). */
export const PREDICT_MAX_CONTENT = 32 << 20;
/** Tokens of a stream's start on which each candidate model is tried. */
const TRIAL_TOKENS = 50_000;
/** A model is used when it needs at most one correction in this many tokens. */
const MAX_CORRECTION_SHARE = 20;

export interface PredictResult {
  size: number;
  /** Streams stored as predicted records, and streams that kept their tokens. */
  predicted: number;
  kept: number;
}

function copyBytes(src: ByteSource, out: ByteSink, n: number, what: string): void {
  for (let left = n; left > 0;) {
    const part = src.chunk(left);
    if (part.length === 0) throw truncated(what);
    out.bytes(part);
    left -= part.length;
  }
}

function header(src: ByteSource, path: string): Uint8Array {
  const head = new Uint8Array(6);
  src.read(head, 6, "the token form's header");
  if (MAGIC.some((byte, i) => head[i] !== byte)) {
    throw formatProblem(`"${path}" is not an archive token form`);
  }
  return head;
}

/** The model that needs the fewest corrections on the stream's first tokens, or null. */
function pickModel(
  stream: Parameters<typeof corrections>[0],
  as284: boolean,
  preferred: number,
): number | null {
  const trial = Math.min(stream.tokenCount, TRIAL_TOKENS);
  const order = [preferred, ...MODEL_PARAMS.keys()].filter((m, i, all) => all.indexOf(m) === i);
  let best: number | null = null;
  let bestCount = Math.floor(trial / MAX_CORRECTION_SHARE);
  // The model of the archive's previous stream is kept when it is about right (a zip's members
  // come from one producer; short streams may need a correction or two at their end).
  const kept = corrections(stream, preferred, as284, Math.max(2, Math.floor(trial / 200)), trial);
  if (kept !== null) return preferred;
  for (const model of order) {
    const found = corrections(stream, model, as284, bestCount, trial);
    if (found === null) continue;
    if (best === null || found.length < bestCount) {
      best = model;
      bestCount = found.length;
    }
    if (bestCount === 0) break;
  }
  return best;
}

/** What a rewrite does with the records that differ between the versions. */
interface RecordRewriter {
  deflate(src: ByteSource, out: ByteSink): void;
  predicted?(src: ByteSource, out: ByteSink): void;
}

/**
 * Copies a token form from version `from` to version `to`, RAW and END records as they are, the
 * others through `rewrite`; returns the output's size.
 */
function rewriteForm(
  inPath: string,
  outPath: string,
  from: number,
  to: number,
  rewrite: RecordRewriter,
): number {
  using input = Deno.openSync(inPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  const src = new ByteSource(input);
  const out = new ByteSink(output);
  const head = header(src, inPath);
  if (head[4] !== from) throw formatProblem(`Token form version ${head[4]} is not ${from}`);
  head[4] = to;
  out.bytes(head);
  for (;;) {
    const tag = src.byte();
    if (tag === TAG_RAW) {
      out.byte(tag);
      const n = readVarint(src);
      out.varint(n);
      copyBytes(src, out, n, "a RAW record");
    } else if (tag === TAG_DEFLATE) {
      rewrite.deflate(src, out);
    } else if (tag === TAG_PREDICTED && rewrite.predicted) {
      rewrite.predicted(src, out);
    } else if (tag === TAG_END) {
      out.byte(tag);
      out.varint(readVarint(src));
      copyBytes(src, out, 32, "the END record");
      if (src.byte() !== -1) throw formatProblem("The token form has bytes after its END record");
      out.flush();
      return out.size;
    } else if (tag < 0) {
      throw truncated("the token form");
    } else {
      throw formatProblem(`The token form has an unknown record tag ${tag}`);
    }
  }
}

/** Copies the `D` record at the source's position (its tag read) as it is. */
function copyDeflate(src: ByteSource, out: ByteSink, start = src.offset): void {
  if (src.offset === start) readTokenStream(src, 0); // only to find the record's end
  const end = src.offset;
  src.seek(start);
  out.byte(TAG_DEFLATE);
  copyBytes(src, out, end - start, "a deflate record");
}

/** Rewrites the version 1 token form at `inPath` as version 2 at `outPath`. */
export function predictForm(inPath: string, outPath: string): PredictResult {
  let predicted = 0;
  let kept = 0;
  let preferred = 0;
  const size = rewriteForm(inPath, outPath, VERSION, VERSION_PREDICTED, {
    deflate(src, out) {
      const start = src.offset;
      const stream = readTokenStream(src, PREDICT_MAX_CONTENT);
      if (!("skip" in stream) && stream.tokenCount > 0) {
        const as284 = codes258As284(stream);
        const model = pickModel(stream, as284, preferred);
        if (model !== null) {
          const limit = Math.floor(stream.tokenCount / MAX_CORRECTION_SHARE) + 8;
          const fixes: Correction[] | null = corrections(stream, model, as284, limit);
          if (fixes !== null) {
            writePredicted(out, stream, model, as284, fixes);
            preferred = model;
            predicted++;
            return;
          }
        }
      }
      copyDeflate(src, out, start);
      kept++;
    },
  });
  return { size, predicted, kept };
}

/** Rewrites the version 2 token form at `inPath` as version 1 at `outPath` (for contraction). */
export function unpredictForm(inPath: string, outPath: string): void {
  rewriteForm(inPath, outPath, VERSION_PREDICTED, VERSION, {
    deflate: (src, out) => copyDeflate(src, out),
    predicted: (src, out) => writeTokenStream(out, readPredicted(src, PREDICT_MAX_CONTENT)),
  });
}

/** The version byte of a token form (`path`), for contraction to pick its path. */
export function formVersion(path: string): number {
  using input = Deno.openSync(path);
  const src = new ByteSource(input);
  return header(src, path)[4];
}
