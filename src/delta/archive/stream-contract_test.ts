/**
 * A stream coded in ranges (codeRange on each, contractCoded to join them) is bit for bit the
 * stream coded whole (contractStream), wherever the ranges are cut: inside blocks, at block
 * boundaries, around empty blocks and at the stream's end; and it inflates to its content.
 */
import assert from "node:assert/strict";
import { inflateRawSync } from "node:zlib";
import { ByteSink } from "./byte-io.ts";
import { type CodedBits, codeRange, contractCoded, contractStream } from "./stream-contract.ts";
import type { TokenBlock, TokenStream } from "./token-stream.ts";

/** A stream of fixed-code blocks (two of them empty) over repetitive text, with its tokens. */
function sampleStream(seed: number): TokenStream {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648);
  const lengths: number[] = [];
  const distances: number[] = [];
  const content: number[] = [];
  while (content.length < 100_000) {
    const n = next();
    if (content.length > 300 && n % 3 === 0) {
      const distance = 1 + (n >> 4) % Math.min(content.length, 32768);
      const length = n % 7 === 0 ? 258 : 3 + (n >> 9) % 30;
      for (let i = 0; i < length; i++) content.push(content[content.length - distance]);
      lengths.push(length);
      distances.push(distance);
    } else {
      content.push(97 + (n >> 5) % 26);
      lengths.push(0);
      distances.push(0);
    }
  }
  const tokenCount = lengths.length;
  const sizes = [Math.floor(tokenCount / 3), 0, Math.floor(tokenCount / 4)];
  sizes.push(tokenCount - sizes[0] - sizes[2], 0);
  const blocks: TokenBlock[] = sizes.map((tokens, i) => ({
    head: (1 << 1) | (i === sizes.length - 1 ? 1 : 0),
    tokens,
  }));
  return {
    blocks,
    lengths: Uint16Array.from(lengths),
    distances: Uint16Array.from(distances),
    tokenCount,
    content: Uint8Array.from(content),
    finalPadding: 0,
  };
}

async function written(write: (out: ByteSink) => void): Promise<Uint8Array> {
  const path = await Deno.makeTempFile();
  try {
    {
      using file = await Deno.open(path, { write: true });
      const out = new ByteSink(file);
      write(out);
      out.flush();
    }
    return await Deno.readFile(path);
  } finally {
    await Deno.remove(path);
  }
}

/** The stream coded in the ranges between `cuts` (token indices), joined. */
function inRanges(stream: TokenStream, cuts: number[]): (out: ByteSink) => void {
  const ends = [...cuts, stream.tokenCount];
  const parts: CodedBits[] = [];
  let from = 0;
  let contentStart = 0;
  for (const [i, to] of ends.entries()) {
    parts.push(codeRange({
      blocks: stream.blocks,
      from,
      to,
      last: i === ends.length - 1,
      lengths: stream.lengths.subarray(from, to),
      distances: stream.distances.subarray(from, to),
      content: stream.content,
      contentStart,
    }));
    for (let k = from; k < to; k++) contentStart += stream.lengths[k] || 1;
    from = to;
  }
  return (out) => contractCoded(parts, stream.finalPadding, out);
}

Deno.test("stream contract: ranges coded apart join into the stream coded whole", async () => {
  for (const seed of [1, 2, 3]) {
    const stream = sampleStream(seed);
    const whole = await written((out) => contractStream(stream, out));
    assert.deepEqual(new Uint8Array(inflateRawSync(whole)), stream.content, "a valid stream");
    const [b0, b1, b2] = [stream.blocks[0].tokens, 0, stream.blocks[2].tokens];
    const boundary = b0 + b1; // where the first empty block sits
    const cutSets = [
      [],
      [1],
      [stream.tokenCount - 1],
      [boundary], // right at the empty block
      [boundary - 1, boundary + 1],
      [boundary + b2], // at the second block boundary
      [100, 2_000, 7_777, boundary + b2 + 5],
      Array.from({ length: 40 }, (_, i) => Math.floor((i + 1) * stream.tokenCount / 41)),
    ];
    for (const wanted of cutSets) {
      const cuts = [...new Set(wanted)].filter((k) => k > 0 && k < stream.tokenCount)
        .sort((a, b) => a - b);
      let joined: Uint8Array;
      try {
        joined = await written(inRanges(stream, cuts));
      } catch (err) {
        throw new Error(`seed ${seed}, cuts ${cuts.join(",")} of ${stream.tokenCount}: ${err}`);
      }
      assert.deepEqual(joined, whole, `seed ${seed}, cuts ${cuts.join(",")}`);
    }
  }
});
