/**
 * Which deflate model describes a stream (the producer's parameter set is not recorded in a
 * deflate stream), and the whole prediction of a stream too small to be cut into chunks: the job
 * a helper thread runs for each member of a zip (model-threads.ts).
 */
import { MODEL_PARAMS } from "./deflate-model.ts";
import { type Correction, corrections } from "./model-chunks.ts";
import type { TokenStream } from "../token-stream.ts";

/** Tokens of a stream's start on which each candidate model is tried. */
const TRIAL_TOKENS = 50_000;
/** A model is used when it needs at most one correction in this many tokens. */
export const MAX_CORRECTION_SHARE = 20;

export type StreamTokens = Pick<TokenStream, "content" | "lengths" | "distances" | "tokenCount">;

/** A model for a stream, and its corrections when the trial already covered every token. */
export interface ModelPick {
  model: number;
  fixes?: Correction[];
}

/** A whole stream to predict: its tokens, and the model tried first. */
export interface StreamTask extends StreamTokens {
  as284: boolean;
  preferred: number;
}

/** Corrections a stream of `tokenCount` tokens may need at most before its tokens are kept. */
export function correctionLimit(tokenCount: number): number {
  return Math.floor(tokenCount / MAX_CORRECTION_SHARE) + 8;
}

/** The model that needs the fewest corrections on the stream's first tokens, or null. */
export function pickModel(
  stream: StreamTokens,
  as284: boolean,
  preferred: number,
): ModelPick | null {
  const trial = Math.min(stream.tokenCount, TRIAL_TOKENS);
  // A trial over the whole stream is its prediction: a zip's small members are not run twice.
  const whole = (fixes: Correction[]) => trial === stream.tokenCount ? fixes : undefined;
  const order = [preferred, ...MODEL_PARAMS.keys()].filter((m, i, all) => all.indexOf(m) === i);
  let best: ModelPick | null = null;
  let bestCount = Math.floor(trial / MAX_CORRECTION_SHARE);
  // The preferred model (the archive's previous stream's) is kept when it is about right (a
  // zip's members come from one producer; short streams may need a correction or two at their
  // end).
  const kept = corrections(stream, preferred, as284, Math.max(2, Math.floor(trial / 200)), trial);
  if (kept !== null) return { model: preferred, fixes: whole(kept) };
  for (const model of order) {
    const found = corrections(stream, model, as284, bestCount, trial);
    if (found === null) continue;
    if (best === null || found.length < bestCount) {
      best = { model, fixes: whole(found) };
      bestCount = found.length;
    }
    if (bestCount === 0) break;
  }
  return best;
}

/** The model of a whole stream and its corrections, or null when no model describes it. */
export function predictStream(task: StreamTask): Required<ModelPick> | null {
  const pick = pickModel(task, task.as284, task.preferred);
  if (pick === null) return null;
  const fixes = pick.fixes ??
    corrections(task, pick.model, task.as284, correctionLimit(task.tokenCount));
  return fixes === null ? null : { model: pick.model, fixes };
}
