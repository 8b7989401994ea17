/**
 * Token form version 2: version 1 with each deflate stream the deflate model reproduces stored
 * as a predicted record (predicted-record.ts) instead of its tokens. Expansion writes version 1
 * and then this pass; contraction undoes it first, so the Huffman re-packing (token-contract.ts)
 * only ever reads version 1. A stream the model does not describe (too many corrections, a
 * stored block, content over PREDICT_MAX_CONTENT) keeps its `D` record: version 2 may hold both.
 *
 * Both passes go through the records in batches (form-rewrite.ts) and run the model on every
 * core: a batch's small streams (a zip's members) one per thread, a large stream in chunks
 * (model-chunks.ts). Memory: a batch and one stream's content and tokens (at most
 * PREDICT_MAX_CONTENT bytes of content, ~3x that in all), whatever the archive's size.
 */
import type { ByteSink } from "./byte-io.ts";
import { copyBytes, type Held, JobBatch, queueRebuild, rewriteForm } from "./form-rewrite.ts";
import { CHUNK_BYTES, corrections, planChunks } from "./model/model-chunks.ts";
import { correctionLimit, pickModel } from "./model/model-pick.ts";
import {
  type Chunk,
  codes258As284,
  type Correction,
  predictTasks,
  readPredicted,
  writePredicted,
} from "./predicted-record.ts";
import { TAG_DEFLATE, VERSION } from "./token-format.ts";
import type { RecordSpan } from "./stream-memo.ts";
import { readTokenStream, type TokenStream, writeTokenStream } from "./token-stream.ts";

export { formVersion } from "./form-rewrite.ts";

export const VERSION_PREDICTED = 2;
/** Largest stream content modelled (bigger streams keep their tokens). */
export const PREDICT_MAX_CONTENT = 32 << 20;

export interface PredictResult {
  size: number;
  /** Streams stored as predicted records, and streams that kept their tokens. */
  predicted: number;
  kept: number;
}

/** What a stream's prediction decided. */
interface Decision {
  model: number;
  fixes: Correction[] | null;
  chunks: Chunk[];
}

/**
 * Rewrites the version 1 token form at `inPath` as version 2 at `outPath`. The model of a
 * batch's streams is tried first with the one the previous batch's last stream used (the members
 * of a zip come from one producer), so the streams of a batch are predicted independently.
 * `spans` gets where each predicted record was written (stream-memo.ts).
 */
export async function predictForm(
  inPath: string,
  outPath: string,
  spans: RecordSpan[] = [],
): Promise<PredictResult> {
  let predicted = 0;
  let kept = 0;
  let preferred = 0;
  let lastModel = 0;
  let streams = 0;
  const batch = new JobBatch();
  const size = await rewriteForm(inPath, outPath, VERSION, VERSION_PREDICTED, {
    deflate(src) {
      const index = streams++;
      const start = src.offset;
      const stream = readTokenStream(src, PREDICT_MAX_CONTENT);
      if ("skip" in stream || stream.tokenCount === 0) return null;
      const end = src.offset;
      const as284 = codes258As284(stream);
      let decision: Decision | null = null;
      const held: Held = {
        content: stream.content.length,
        write(out: ByteSink) {
          if (decision?.fixes) {
            const from = out.size;
            writePredicted(out, stream, decision.model, as284, decision.fixes, decision.chunks);
            spans.push({ stream: index, from, to: out.size });
            predicted++;
          } else {
            // The record as it was, read again from the form (most records are predicted: none
            // is kept in memory for the case).
            const resume = src.offset;
            src.seek(start);
            out.byte(TAG_DEFLATE);
            copyBytes(src, out, end - start, "a deflate record");
            src.seek(resume);
            kept++;
          }
        },
      };
      if (stream.content.length > 2 * CHUNK_BYTES) {
        decision = predictLarge(stream, as284, preferred, batch);
      } else {
        batch.add([{ stream: { ...stream, as284, preferred } }], ([result]) => {
          const picked = "picked" in result ? result.picked : null;
          decision = picked && { model: picked.model, fixes: picked.fixes, chunks: [] };
        });
      }
      const model = () => decision?.fixes ? decision.model : null;
      batch.add([], () => {
        const m = model();
        if (m !== null) lastModel = m;
      });
      return held;
    },
    async run() {
      await batch.run();
      preferred = lastModel;
    },
  });
  return { size, predicted, kept };
}

/**
 * A large stream: its model is picked here on its first tokens (the preferred one kept when
 * about right), then its chunks are predicted with the batch.
 */
function predictLarge(
  stream: TokenStream,
  as284: boolean,
  preferred: number,
  batch: JobBatch,
): Decision | null {
  const pick = pickModel(stream, as284, preferred);
  if (pick === null) return null;
  const limit = correctionLimit(stream.tokenCount);
  const chunks = planChunks(stream.lengths, stream.tokenCount, CHUNK_BYTES);
  const decision: Decision = { model: pick.model, fixes: null, chunks };
  if (chunks.length === 1) {
    decision.fixes = corrections(stream, pick.model, as284, limit);
    return decision;
  }
  const tasks = predictTasks(stream, chunks, pick.model, as284, limit);
  batch.add(tasks.map((predict) => ({ predict })), (results) => {
    const parts = results.map((result) => "fixes" in result ? result.fixes : null);
    const fixes = parts.some((part) => part === null) ? null : parts.flatMap((part) => part!);
    decision.fixes = fixes !== null && fixes.length <= limit ? fixes : null;
  });
  return decision;
}

/** Rewrites the version 2 token form at `inPath` as version 1 at `outPath` (for contraction). */
export async function unpredictForm(inPath: string, outPath: string): Promise<void> {
  const batch = new JobBatch();
  await rewriteForm(inPath, outPath, VERSION_PREDICTED, VERSION, {
    deflate(src) {
      readTokenStream(src, 0); // only to find the record's end: it is copied as it is
      return null;
    },
    predicted(src, tag) {
      const record = readPredicted(src, PREDICT_MAX_CONTENT, tag);
      const rebuilt = queueRebuild(batch, record);
      return {
        content: record.content.length,
        write: (out) => writeTokenStream(out, rebuilt()),
      };
    },
    run: () => batch.run(),
  });
}
