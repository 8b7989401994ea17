/**
 * Contraction of a version 2 token form straight into the archive: RAW bytes go out as they
 * are, `D` records are re-packed from the file (token-contract.ts), predicted records are rebuilt
 * by the model in batches on every core (form-rewrite.ts) and Huffman-coded from memory
 * (stream-contract.ts), so no version 1 form is written and read back. The END record's size and
 * sha256 are checked against the bytes written: a damaged form fails, never yields other bytes.
 */
import {
  type ByteSink,
  ByteSource,
  formatProblem,
  hashingSink,
  readAt,
  truncated,
} from "./byte-io.ts";
import {
  BATCH_BYTES,
  copyBytes,
  HELD_BYTES,
  JobBatch,
  queueRebuild,
  readBytes,
  readHeader,
} from "./form-rewrite.ts";
import { PREDICT_MAX_CONTENT, VERSION_PREDICTED } from "./predicted-form.ts";
import { readPredicted, TAG_PREDICTED, TAG_PREDICTED_CHUNKED } from "./predicted-record.ts";
import { contractStream } from "./stream-contract.ts";
import { contractDeflate, readVarint } from "./token-contract.ts";
import { TAG_DEFLATE, TAG_END, TAG_RAW } from "./token-format.ts";
import { recordDigest, type StreamMemo } from "./stream-memo.ts";

/** The digest of the record from `start` to where the source is (read again, then past it). */
function digestOfRecord(src: ByteSource, start: number): string {
  const end = src.offset;
  src.seek(start);
  return recordDigest(readBytes(src, end - start, "a predicted record"));
}

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Checks the END record (its tag read) against the bytes a contraction wrote through `out`
 * (hashingSink): their size and sha256. A damaged form fails here, never yields other bytes.
 */
export function endOfContraction(
  src: ByteSource,
  out: ByteSink,
  digest: () => { size: number; sha256: string },
): { size: number; sha256: string } {
  out.flush();
  const size = readVarint(src);
  const expected = hex(readBytes(src, 32, "the END record"));
  const rebuilt = digest();
  if (size !== rebuilt.size || rebuilt.sha256 !== expected) {
    throw formatProblem(
      `The rebuilt bytes (${rebuilt.size} bytes, sha256 ${rebuilt.sha256}) differ from the ` +
        "original's",
    );
  }
  if (src.byte() !== -1) throw formatProblem("The token form has bytes after its END record");
  return rebuilt;
}

/**
 * Writes the archive the version 2 form at `inPath` describes to `outPath`, checked. A predicted
 * record whose bytes `memo` knows (stream-memo.ts) is not rebuilt: its stream is copied from the
 * memo's archive (`copied` counts them).
 */
export async function contractPredictedForm(
  inPath: string,
  outPath: string,
  memo?: StreamMemo,
): Promise<{ size: number; sha256: string; copied: number }> {
  using input = Deno.openSync(inPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  using archive = memo ? Deno.openSync(memo.archivePath) : undefined;
  const known = new Map(memo?.streams.map((stream) => [stream.digest, stream]));
  let copied = 0;
  const src = new ByteSource(input);
  const { out, digest } = hashingSink(output);
  const head = readHeader(src, inPath);
  if (head[4] !== VERSION_PREDICTED) throw formatProblem(`Token form version ${head[4]} is not 2`);
  const batch = new JobBatch();
  const held: ((out: ByteSink) => void)[] = [];
  let content = 0;
  const runBatch = async () => {
    await batch.run();
    for (const write of held) write(out);
    held.length = 0;
    content = 0;
  };
  for (;;) {
    const tag = src.byte();
    if (tag === TAG_RAW) {
      const n = readVarint(src);
      if (n <= HELD_BYTES) {
        const bytes = readBytes(src, n, "a RAW record");
        held.push((o) => o.bytes(bytes));
      } else {
        await runBatch();
        copyBytes(src, out, n, "a RAW record");
      }
    } else if (tag === TAG_DEFLATE) {
      await runBatch();
      contractDeflate(src, out);
    } else if (tag === TAG_PREDICTED || tag === TAG_PREDICTED_CHUNKED) {
      const start = src.offset - 1;
      const record = readPredicted(src, PREDICT_MAX_CONTENT, tag);
      const stream = archive && known.get(digestOfRecord(src, start));
      if (archive && stream) {
        const bytes = readAt(archive, stream.offset, stream.length, "a baseline archive's stream");
        held.push((o) => o.bytes(bytes));
        copied++;
      } else {
        const rebuilt = queueRebuild(batch, record);
        held.push((o) => contractStream(rebuilt(), o));
      }
      content += record.content.length;
      if (content >= BATCH_BYTES) await runBatch();
    } else if (tag === TAG_END) {
      await runBatch();
      return { ...endOfContraction(src, out, digest), copied };
    } else if (tag < 0) {
      throw truncated("the token form");
    } else {
      throw formatProblem(`The token form has an unknown record tag ${tag}`);
    }
  }
}
