/**
 * Chunks of a predicted stream: the deflate model (deflate-model.ts) runs through a stream one
 * token after the other, ~30 MB of content a second on one core, twice per archive PUT (the
 * prediction, then the exact-rebuild check) and once per cold read. A stream cut into chunks at
 * token boundaries right after a match lets each chunk run on its own model, on its own core: the
 * model starts at the chunk (`DeflateModel.startAt`) over the content from 32 KiB before it (all a
 * deflater can refer to) to LOOKAHEAD past its end. For zlib's lazy parse that is the state a
 * whole run is in after a match, so chunking costs no corrections there; where it differs (the
 * greedy levels skip positions inside long matches) the chunk's corrections say so. A chunk is
 * defined by its window, so the writer and every reader run the same model on the same bytes,
 * whichever thread runs it (model-threads.ts).
 */
import { WSIZE } from "./deflate-chains.ts";
import { DeflateModel, MODEL_PARAMS } from "./deflate-model.ts";
import { formatProblem } from "../byte-io.ts";
import { LENGTH_258_AS_284, type TokenStream } from "../token-stream.ts";

/** Content a chunk's model reads past the chunk: a lazy step's match and the insertion ahead. */
export const LOOKAHEAD = 1024;
/**
 * Content per chunk a writer aims at (a chunk ends at the first match past it); streams of more
 * than two are chunked. 512 KiB rather than 1 MiB (and 2 before): the threads then share a stream
 * evenly (a 3.3 MB one was cut into 1.0, 1.0 and 1.3 MB, and one thread ran two of them while the
 * other waited): a 3 MB npm package rebuilds 20% faster, a 7 MB one 10%; 256 KiB gained no more
 * (docs/BENCHMARKS.md). Forms written with larger chunks keep them.
 */
export const CHUNK_BYTES = 512 << 10;

/** A token the model got wrong, by its index in the stream. */
export interface Correction {
  token: number;
  length: number;
  distance: number;
}

/** One chunk of a stream: its tokens and the content they cover. */
export interface Chunk {
  tokens: number;
  bytes: number;
}

/** What one model run needs: the chunk, where it sits, and its window of content. */
export interface ChunkTask {
  model: number;
  as284: boolean;
  /** The content from WSIZE before the chunk to LOOKAHEAD after it (or the stream's ends). */
  window: Uint8Array;
  /** Where the chunk starts in `window`, and in the stream's content. */
  start: number;
  position: number;
  /** The chunk's first token's index in the stream, and its tokens. */
  firstToken: number;
  tokens: number;
  bytes: number;
}

/** A prediction: the chunk's real tokens, and how many corrections make the model unfit. */
export interface PredictTask extends ChunkTask {
  lengths: Uint16Array;
  distances: Uint16Array;
  limit: number;
}

/** A rebuild: the chunk's corrections (stream indices, in order). */
export interface RebuildTask extends ChunkTask {
  fixes: Correction[];
}

export interface ChunkTokens {
  lengths: Uint16Array;
  distances: Uint16Array;
}

/** Cuts a stream into chunks of about `chunkBytes` of content, each ending after a match. */
export function planChunks(lengths: Uint16Array, tokenCount: number, chunkBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  let tokens = 0;
  let bytes = 0;
  for (let k = 0; k < tokenCount; k++) {
    const length = lengths[k];
    tokens++;
    bytes += length === 0 ? 1 : length === LENGTH_258_AS_284 ? 258 : length;
    if (length !== 0 && bytes >= chunkBytes && k < tokenCount - 1) {
      chunks.push({ tokens, bytes });
      tokens = 0;
      bytes = 0;
    }
  }
  chunks.push({ tokens, bytes });
  return chunks;
}

/** The tasks of a stream's chunks (`content` is the whole stream's). */
export function chunkTasks(
  content: Uint8Array,
  chunks: Chunk[],
  model: number,
  as284: boolean,
): ChunkTask[] {
  const tasks: ChunkTask[] = [];
  let position = 0;
  let firstToken = 0;
  for (const { tokens, bytes } of chunks) {
    const base = position > WSIZE ? position - WSIZE : 0;
    const end = Math.min(content.length, position + bytes + LOOKAHEAD);
    const window = content.subarray(base, end);
    tasks.push({
      model,
      as284,
      window,
      start: position - base,
      position,
      firstToken,
      tokens,
      bytes,
    });
    position += bytes;
    firstToken += tokens;
  }
  return tasks;
}

function modelFor(task: ChunkTask): DeflateModel {
  const m = new DeflateModel(task.window, MODEL_PARAMS[task.model]);
  if (task.start > 0) m.startAt(task.start);
  return m;
}

/**
 * The corrections the model needs to give back the chunk's tokens (`task.lengths`, indexed from
 * the chunk's first), or null once they would pass `limit`.
 */
export function predictChunk(task: PredictTask): Correction[] | null {
  const { lengths, distances } = task;
  const m = modelFor(task);
  const found: Correction[] = [];
  const proposal = m.proposal;
  const default258 = task.as284 ? LENGTH_258_AS_284 : 258;
  for (let k = 0; k < task.tokens; k++) {
    const has = m.next();
    const actual = lengths[k];
    const proposed = proposal.length === 258 ? default258 : proposal.length;
    if (has && proposed === actual && (actual === 0 || proposal.distance === distances[k])) {
      m.accept();
      continue;
    }
    found.push({ token: task.firstToken + k, length: actual, distance: distances[k] });
    if (found.length > task.limit) return null;
    m.force(actual === LENGTH_258_AS_284 ? 258 : actual);
  }
  return found;
}

/**
 * The corrections the model needs to give back the stream's first `tokens` tokens, or null once
 * they would pass `limit` (the model does not describe this producer: try another or keep the
 * tokens).
 */
export function corrections(
  stream: Pick<TokenStream, "content" | "lengths" | "distances" | "tokenCount">,
  model: number,
  as284: boolean,
  limit: number,
  tokens = stream.tokenCount,
): Correction[] | null {
  const { content, lengths, distances } = stream;
  return predictChunk({
    model,
    as284,
    window: content,
    start: 0,
    position: 0,
    firstToken: 0,
    tokens,
    bytes: content.length,
    lengths,
    distances,
    limit,
  });
}

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

/** Runs the model through a chunk with its corrections: the chunk's tokens. */
export function rebuildChunk(task: RebuildTask): ChunkTokens {
  const lengths = new Uint16Array(task.tokens);
  const distances = new Uint16Array(task.tokens);
  const m = modelFor(task);
  const proposal = m.proposal;
  const default258 = task.as284 ? LENGTH_258_AS_284 : 258;
  const fixes = task.fixes;
  let fix = 0;
  let pos = task.position;
  for (let k = 0; k < task.tokens; k++) {
    const has = m.next();
    let length: number;
    let distance: number;
    if (fix < fixes.length && fixes[fix].token === task.firstToken + k) {
      ({ length, distance } = fixes[fix++]);
      m.force(length === LENGTH_258_AS_284 ? 258 : length);
    } else {
      if (!has) damaged("the model ends before the tokens");
      length = proposal.length === 258 ? default258 : proposal.length;
      distance = proposal.distance;
      m.accept();
    }
    const n = length === 0 ? 1 : length === LENGTH_258_AS_284 ? 258 : length;
    if (length !== 0 && (distance > pos || distance === 0)) damaged("a match before the start");
    lengths[k] = length;
    distances[k] = distance;
    pos += n;
  }
  if (fix !== fixes.length) damaged("a correction outside its chunk");
  if (pos !== task.position + task.bytes) damaged("the tokens do not cover the chunk");
  return { lengths, distances };
}
