/**
 * The predicted record (`P`, token form version 2): one deflate stream as its decompressed
 * content, its block layout and the few tokens where the deflate model (deflate-model.ts) and the
 * producer disagree. A deflater's matches for a stretch of content depend on the 32 KiB before
 * it, so the tokens of two releases differ far more than their content (docs/DELTA.md); predicted
 * from the content, they cost nothing where the model reproduces the producer, and the delta of
 * two versions becomes the delta of their content.
 *
 *   record      = "P" u8 model (MODEL_PARAMS index) u8 flags (bit 0: 258 coded as 284 + 31)
 *                 varint content-size varint token-count varint block-count block*
 *                 u8 final-padding varint correction-count correction* content
 *   block       = u8 head (BFINAL | BTYPE << 1; BTYPE 1 or 2)
 *                 [BTYPE 2: varint nbits, ceil(nbits/8) bytes of header bits] varint tokens
 *   correction  = varint tokens-since-previous-correction varint code [u16 distance - 1]
 *   code        = 0 literal | 1..256 match of length code + 2 | 257 match of 258 coded the other
 *                 way than flag bit 0 says (the distance follows every match)
 *
 * The chunked record (`Q`) is the same with a chunk table after the token count, so its chunks
 * can run on several cores (model-chunks.ts):
 *
 *   chunked     = "Q" u8 model u8 flags varint content-size varint token-count
 *                 varint chunk-count (varint tokens varint content-bytes)^chunk-count
 *                 varint block-count block* u8 final-padding varint correction-count
 *                 correction* content
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { MODEL_PARAMS } from "./model/deflate-model.ts";
import {
  type Chunk,
  chunkTasks,
  type ChunkTokens,
  type Correction,
  type PredictTask,
  type RebuildTask,
} from "./model/model-chunks.ts";
import { readVarint } from "./token-contract.ts";
import { LENGTH_258_AS_284, type TokenBlock, type TokenStream } from "./token-stream.ts";

export type { Chunk, Correction } from "./model/model-chunks.ts";

export const TAG_PREDICTED = 0x50; // "P"
export const TAG_PREDICTED_CHUNKED = 0x51; // "Q"
const FLAG_258_AS_284 = 1;
const CODE_OTHER_258 = 257;
/** Most chunks a record may have (a damaged count must not allocate without bound). */
const MAX_CHUNKS = 1 << 16;

/** The tasks that predict each of the stream's chunks (`limit` corrections each at most). */
export function predictTasks(
  stream: TokenStream,
  chunks: Chunk[],
  model: number,
  as284: boolean,
  limit: number,
): PredictTask[] {
  return chunkTasks(stream.content, chunks, model, as284).map((task) => ({
    ...task,
    lengths: stream.lengths.subarray(task.firstToken, task.firstToken + task.tokens),
    distances: stream.distances.subarray(task.firstToken, task.firstToken + task.tokens),
    limit,
  }));
}

/** Whether the producer codes length 258 as 284 + 31 (by the first such match). */
export function codes258As284(stream: TokenStream): boolean {
  for (let k = 0; k < stream.tokenCount; k++) {
    if (stream.lengths[k] === LENGTH_258_AS_284) return true;
    if (stream.lengths[k] === 258) return false;
  }
  return false;
}

export function writePredicted(
  out: ByteSink,
  stream: TokenStream,
  model: number,
  as284: boolean,
  found: Correction[],
  chunks: Chunk[] = [],
): void {
  out.byte(chunks.length > 1 ? TAG_PREDICTED_CHUNKED : TAG_PREDICTED);
  out.byte(model);
  out.byte(as284 ? FLAG_258_AS_284 : 0);
  out.varint(stream.content.length);
  out.varint(stream.tokenCount);
  if (chunks.length > 1) {
    out.varint(chunks.length);
    for (const chunk of chunks) {
      out.varint(chunk.tokens);
      out.varint(chunk.bytes);
    }
  }
  out.varint(stream.blocks.length);
  for (const block of stream.blocks) {
    out.byte(block.head);
    if (block.header !== undefined) {
      out.varint(block.headerBits!);
      out.bytes(block.header);
    }
    out.varint(block.tokens);
  }
  out.byte(stream.finalPadding);
  out.varint(found.length);
  let last = -1;
  for (const c of found) {
    out.varint(c.token - last - 1);
    last = c.token;
    if (c.length === 0) {
      out.varint(0);
      continue;
    }
    const other = as284 ? 258 : LENGTH_258_AS_284;
    out.varint(
      c.length === other ? CODE_OTHER_258 : (c.length === LENGTH_258_AS_284 ? 256 : c.length - 2),
    );
    out.byte((c.distance - 1) & 255);
    out.byte((c.distance - 1) >> 8);
  }
  out.bytes(stream.content);
}

function damaged(what: string): never {
  throw formatProblem(`The token form is damaged: ${what}`);
}

function byteOf(src: ByteSource): number {
  const byte = src.byte();
  if (byte < 0) throw truncated("a predicted record");
  return byte;
}

/** A `P` or `Q` record as read: what the model needs to rebuild its stream's tokens. */
export interface PredictedRecord {
  model: number;
  as284: boolean;
  tokenCount: number;
  blocks: TokenBlock[];
  finalPadding: number;
  fixes: Correction[];
  chunks: Chunk[];
  content: Uint8Array;
}

/**
 * Reads a `P` or `Q` record (its tag already read). Its tokens come from running the model
 * (`rebuildTasks`, then `rebuiltStream`), which checks every proposal against what the record
 * allows: a damaged record fails, never yields tokens.
 */
export function readPredicted(
  src: ByteSource,
  maxContent: number,
  tag = TAG_PREDICTED,
): PredictedRecord {
  const model = byteOf(src);
  if (model >= MODEL_PARAMS.length) damaged(`unknown model ${model}`);
  const as284 = (byteOf(src) & FLAG_258_AS_284) !== 0;
  const size = readVarint(src);
  const tokenCount = readVarint(src);
  if (size > maxContent || tokenCount > size) damaged(`a stream of ${size} bytes`);
  const chunks = tag === TAG_PREDICTED_CHUNKED
    ? readChunks(src, tokenCount, size)
    : [{ tokens: tokenCount, bytes: size }];
  const blockCount = readVarint(src);
  if (blockCount === 0 || blockCount > tokenCount + 1) damaged(`${blockCount} blocks`);
  const blocks: TokenBlock[] = [];
  let counted = 0;
  for (let i = 0; i < blockCount; i++) {
    const head = byteOf(src);
    const type = head >> 1;
    if ((type !== 1 && type !== 2) || ((head & 1) === 1) !== (i === blockCount - 1)) {
      damaged(`block byte ${head}`);
    }
    const block: TokenBlock = { head, tokens: 0 };
    if (type === 2) {
      const bits = readVarint(src);
      if (bits > 8 * 1024) damaged(`a dynamic header of ${bits} bits`);
      block.header = new Uint8Array((bits + 7) >> 3);
      src.read(block.header, block.header.length, "a dynamic header");
      block.headerBits = bits;
    }
    block.tokens = readVarint(src);
    counted += block.tokens;
    blocks.push(block);
  }
  if (counted !== tokenCount) damaged("the blocks do not add up to the tokens");
  const finalPadding = byteOf(src);
  const correctionCount = readVarint(src);
  if (correctionCount > tokenCount) damaged(`${correctionCount} corrections`);
  const fixes: Correction[] = [];
  let last = -1;
  for (let i = 0; i < correctionCount; i++) {
    const token = last + 1 + readVarint(src);
    last = token;
    const code = readVarint(src);
    if (code > CODE_OTHER_258) damaged(`correction code ${code}`);
    if (code === 0) {
      fixes.push({ token, length: 0, distance: 0 });
      continue;
    }
    const length = code === CODE_OTHER_258
      ? (as284 ? 258 : LENGTH_258_AS_284)
      : (code === 256 && as284 ? LENGTH_258_AS_284 : code + 2);
    const distance = (byteOf(src) | (byteOf(src) << 8)) + 1;
    fixes.push({ token, length, distance });
  }
  if (last >= tokenCount) damaged("a correction past the last token");
  const content = new Uint8Array(size);
  src.read(content, size, "a predicted record's content");
  return { model, as284, tokenCount, blocks, finalPadding, fixes, chunks, content };
}

function readChunks(src: ByteSource, tokenCount: number, size: number): Chunk[] {
  const count = readVarint(src);
  if (count < 2 || count > MAX_CHUNKS || count > tokenCount) damaged(`${count} chunks`);
  const chunks: Chunk[] = [];
  let tokens = 0;
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const chunk = { tokens: readVarint(src), bytes: readVarint(src) };
    if (chunk.tokens === 0 || chunk.bytes < chunk.tokens) damaged("an empty chunk");
    tokens += chunk.tokens;
    bytes += chunk.bytes;
    chunks.push(chunk);
  }
  if (tokens !== tokenCount || bytes !== size) damaged("the chunks do not add up to the stream");
  return chunks;
}

/** The model runs that rebuild a record's tokens, a chunk each. */
export function rebuildTasks(r: PredictedRecord): RebuildTask[] {
  let fix = 0;
  return chunkTasks(r.content, r.chunks, r.model, r.as284).map((task) => {
    const from = fix;
    const end = task.firstToken + task.tokens;
    while (fix < r.fixes.length && r.fixes[fix].token < end) fix++;
    return { ...task, fixes: r.fixes.slice(from, fix) };
  });
}

/** The record's stream, from the tokens its rebuild tasks gave (in their order). */
export function rebuiltStream(r: PredictedRecord, parts: ChunkTokens[]): TokenStream {
  const stream = {
    blocks: r.blocks,
    tokenCount: r.tokenCount,
    content: r.content,
    finalPadding: r.finalPadding,
  };
  if (parts.length === 1) return { ...stream, ...parts[0] };
  const lengths = new Uint16Array(r.tokenCount);
  const distances = new Uint16Array(r.tokenCount);
  let at = 0;
  for (const part of parts) {
    lengths.set(part.lengths, at);
    distances.set(part.distances, at);
    at += part.lengths.length;
  }
  return { ...stream, lengths, distances };
}
