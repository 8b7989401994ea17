/**
 * Contraction of a version 2 token form straight into the archive: RAW bytes go out as they
 * are, `D` records are re-packed from the file (token-contract.ts), predicted records are rebuilt
 * by the model in batches on every core (form-rewrite.ts) and Huffman-coded from memory
 * (stream-contract.ts), so no version 1 form is written and read back. The END record's size and
 * sha256 are checked against the bytes written: a damaged form fails, never yields other bytes.
 */
import { createHash } from "node:crypto";
import { ByteSink, ByteSource, formatProblem, truncated } from "./byte-io.ts";
import { BATCH_BYTES, copyBytes, HELD_BYTES, JobBatch, readBytes } from "./form-rewrite.ts";
import type { ChunkTokens } from "./model/model-chunks.ts";
import { PREDICT_MAX_CONTENT, VERSION_PREDICTED } from "./predicted-form.ts";
import {
  readPredicted,
  rebuildTasks,
  rebuiltStream,
  TAG_PREDICTED,
  TAG_PREDICTED_CHUNKED,
} from "./predicted-record.ts";
import { contractStream } from "./stream-contract.ts";
import { contractDeflate, readVarint } from "./token-contract.ts";
import { MAGIC, TAG_DEFLATE, TAG_END, TAG_RAW } from "./token-format.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** Writes the archive the version 2 form at `inPath` describes to `outPath`, checked. */
export async function contractPredictedForm(
  inPath: string,
  outPath: string,
): Promise<{ size: number; sha256: string }> {
  using input = Deno.openSync(inPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  const hash = createHash("sha256");
  let hashed = 0;
  const src = new ByteSource(input);
  const out = new ByteSink(output, (bytes) => {
    hash.update(bytes);
    hashed += bytes.length;
  });
  const head = readBytes(src, 6, "the token form's header");
  if (MAGIC.some((byte, i) => head[i] !== byte)) {
    throw formatProblem(`"${inPath}" is not an archive token form`);
  }
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
      const record = readPredicted(src, PREDICT_MAX_CONTENT, tag);
      let parts: ChunkTokens[] = [];
      batch.add(rebuildTasks(record).map((rebuild) => ({ rebuild })), (results) => {
        parts = results.map((result) => {
          if ("tokens" in result) return result.tokens;
          throw new Error("A rebuild job answered something else");
        });
      });
      held.push((o) => contractStream(rebuiltStream(record, parts), o));
      content += record.content.length;
      if (content >= BATCH_BYTES) await runBatch();
    } else if (tag === TAG_END) {
      await runBatch();
      out.flush();
      const size = readVarint(src);
      const expected = hex(readBytes(src, 32, "the END record"));
      const sha256 = hash.digest("hex");
      if (size !== hashed || sha256 !== expected) {
        throw formatProblem(
          `The rebuilt bytes (${hashed} bytes, sha256 ${sha256}) differ from the original's`,
        );
      }
      if (src.byte() !== -1) throw formatProblem("The token form has bytes after its END record");
      return { size, sha256 };
    } else if (tag < 0) {
      throw truncated("the token form");
    } else {
      throw formatProblem(`The token form has an unknown record tag ${tag}`);
    }
  }
}
