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
 */
import { type ByteSink, type ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { DeflateModel, MODEL_PARAMS } from "./deflate-model.ts";
import { readVarint } from "./token-contract.ts";
import { LENGTH_258_AS_284, type TokenBlock, type TokenStream } from "./token-stream.ts";

export const TAG_PREDICTED = 0x50; // "P"
const FLAG_258_AS_284 = 1;
const CODE_OTHER_258 = 257;

export interface Correction {
  token: number;
  length: number;
  distance: number;
}

/**
 * The corrections the model needs to give back the stream's tokens, or null once they would pass
 * `limit` (the model does not describe this producer: try another or keep the tokens).
 */
export function corrections(
  stream: TokenStream,
  model: number,
  as284: boolean,
  limit: number,
  tokens = stream.tokenCount,
): Correction[] | null {
  const { lengths, distances } = stream;
  const m = new DeflateModel(stream.content, MODEL_PARAMS[model]);
  const found: Correction[] = [];
  const proposal = m.proposal;
  const default258 = as284 ? LENGTH_258_AS_284 : 258;
  for (let k = 0; k < tokens; k++) {
    const has = m.next();
    const actual = lengths[k];
    const proposed = proposal.length === 258 ? default258 : proposal.length;
    if (has && proposed === actual && (actual === 0 || proposal.distance === distances[k])) {
      m.accept();
      continue;
    }
    found.push({ token: k, length: actual, distance: distances[k] });
    if (found.length > limit) return null;
    m.force(actual === LENGTH_258_AS_284 ? 258 : actual);
  }
  return found;
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
): void {
  out.byte(TAG_PREDICTED);
  out.byte(model);
  out.byte(as284 ? FLAG_258_AS_284 : 0);
  out.varint(stream.content.length);
  out.varint(stream.tokenCount);
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

/**
 * Reads a `P` record (its tag already read) and runs the model to rebuild its stream, checking
 * every proposal against what the record allows (a damaged record fails, never yields tokens).
 */
export function readPredicted(src: ByteSource, maxContent: number): TokenStream {
  const model = byteOf(src);
  if (model >= MODEL_PARAMS.length) damaged(`unknown model ${model}`);
  const as284 = (byteOf(src) & FLAG_258_AS_284) !== 0;
  const size = readVarint(src);
  const tokenCount = readVarint(src);
  if (size > maxContent || tokenCount > size) damaged(`a stream of ${size} bytes`);
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
  return rebuild(content, { model, as284, tokenCount, blocks, finalPadding, fixes });
}

function rebuild(
  content: Uint8Array,
  r: {
    model: number;
    as284: boolean;
    tokenCount: number;
    blocks: TokenBlock[];
    finalPadding: number;
    fixes: Correction[];
  },
): TokenStream {
  const lengths = new Uint16Array(r.tokenCount);
  const distances = new Uint16Array(r.tokenCount);
  const m = new DeflateModel(content, MODEL_PARAMS[r.model]);
  const proposal = m.proposal;
  const default258 = r.as284 ? LENGTH_258_AS_284 : 258;
  let fix = 0;
  let pos = 0;
  for (let k = 0; k < r.tokenCount; k++) {
    const has = m.next();
    let length: number;
    let distance: number;
    if (fix < r.fixes.length && r.fixes[fix].token === k) {
      ({ length, distance } = r.fixes[fix++]);
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
  if (pos !== content.length) damaged("the tokens do not cover the content");
  return {
    blocks: r.blocks,
    lengths,
    distances,
    tokenCount: r.tokenCount,
    content,
    finalPadding: r.finalPadding,
  };
}
