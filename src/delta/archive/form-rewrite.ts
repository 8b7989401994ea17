/**
 * The rewrite of a token form from one version to the other (predicted-form.ts), in batches: the
 * records of about BATCH_BYTES of stream content are read ahead, the rewriter runs their deflate
 * model jobs together (on every core, model-threads.ts), then they are written in order. RAW and
 * END records are copied as they are. Memory: one batch, plus one stream of at most the
 * rewriter's content limit; a record too large to hold is copied straight after its batch.
 */
import { ByteSink, ByteSource, formatProblem, truncated } from "./byte-io.ts";
import {
  type PredictedRecord,
  rebuildTasks,
  rebuiltStream,
  TAG_PREDICTED,
  TAG_PREDICTED_CHUNKED,
} from "./predicted-record.ts";
import type { TokenStream } from "./token-stream.ts";
import type { ChunkTokens } from "./model/model-chunks.ts";
import { readVarint } from "./token-contract.ts";
import { type ModelJob, type ModelResult, runJobs } from "./model/model-threads.ts";
import { MAGIC, TAG_DEFLATE, TAG_END, TAG_RAW } from "./token-format.ts";

/** Stream content read ahead before a batch runs. */
export const BATCH_BYTES = 8 << 20;
/** Records copied as they are wait in memory with their batch up to this size. */
export const HELD_BYTES = 1 << 20;

/** Model jobs of a batch, and how each record gets its results back. */
export class JobBatch {
  readonly jobs: ModelJob[] = [];
  readonly #takers: ((results: ModelResult[]) => void)[] = [];

  /** Queues `jobs`; `take` gets their results, in order, when the batch ran. */
  add(jobs: ModelJob[], take: (results: ModelResult[]) => void): void {
    const from = this.jobs.length;
    this.jobs.push(...jobs);
    this.#takers.push((all) => take(all.slice(from, from + jobs.length)));
  }

  async run(): Promise<void> {
    if (this.jobs.length === 0) return;
    const results = await runJobs(this.jobs);
    for (const take of this.#takers.splice(0)) take(results);
    this.jobs.length = 0;
  }
}

/** Queues the model runs that rebuild a predicted record; its stream, once the batch ran. */
export function queueRebuild(batch: JobBatch, record: PredictedRecord): () => TokenStream {
  let parts: ChunkTokens[] = [];
  batch.add(rebuildTasks(record).map((rebuild) => ({ rebuild })), (results) => {
    parts = results.map((result) => {
      if ("tokens" in result) return result.tokens;
      throw new Error("A rebuild job answered something else");
    });
  });
  return () => rebuiltStream(record, parts);
}

/** A record read ahead, written once its batch ran. */
export interface Held {
  /** The stream content it brings into the batch. */
  content: number;
  write(out: ByteSink): void;
}

/** What a rewrite does with the records that differ between the versions. */
export interface RecordRewriter {
  /** Reads a `D` record (tag read); null: copy it as it is (the source is past it then). */
  deflate(src: ByteSource): Held | null;
  /** Reads a `P` or `Q` record (tag read); absent: such records are refused. */
  predicted?(src: ByteSource, tag: number): Held;
  /** Runs the model jobs of every record held since the last run. */
  run(): Promise<void>;
}

export function copyBytes(src: ByteSource, out: ByteSink, n: number, what: string): void {
  for (let left = n; left > 0;) {
    const part = src.chunk(left);
    if (part.length === 0) throw truncated(what);
    out.bytes(part);
    left -= part.length;
  }
}

/** `n` bytes of the source, in memory. */
export function readBytes(src: ByteSource, n: number, what: string): Uint8Array {
  const bytes = new Uint8Array(n);
  src.read(bytes, n, what);
  return bytes;
}

/** The 6-byte header of the token form at `path`, checked to be one. */
export function readHeader(src: ByteSource, path: string): Uint8Array {
  const head = readBytes(src, 6, "the token form's header");
  if (MAGIC.some((byte, i) => head[i] !== byte)) {
    throw formatProblem(`"${path}" is not an archive token form`);
  }
  return head;
}

/** The version byte of a token form (`path`). */
export function formVersion(path: string): number {
  using input = Deno.openSync(path);
  return readHeader(new ByteSource(input), path)[4];
}

/**
 * Copies a token form from version `from` to version `to` through `rewrite`; returns the
 * output's size.
 */
export async function rewriteForm(
  inPath: string,
  outPath: string,
  from: number,
  to: number,
  rewrite: RecordRewriter,
): Promise<number> {
  using input = Deno.openSync(inPath);
  using output = Deno.openSync(outPath, { write: true, create: true, truncate: true });
  const src = new ByteSource(input);
  const out = new ByteSink(output);
  const head = readHeader(src, inPath);
  if (head[4] !== from) throw formatProblem(`Token form version ${head[4]} is not ${from}`);
  head[4] = to;
  out.bytes(head);
  const held: Held[] = [];
  let content = 0;
  const runBatch = async () => {
    await rewrite.run();
    for (const record of held) record.write(out);
    held.length = 0;
    content = 0;
  };
  const hold = async (record: Held) => {
    held.push(record);
    content += record.content;
    if (content >= BATCH_BYTES) await runBatch();
  };
  /** A record copied as it is: held when small, else copied after the batch. */
  const copyRecord = async (tag: number, start: number) => {
    const size = src.offset - start;
    src.seek(start);
    if (size <= HELD_BYTES) {
      const bytes = readBytes(src, size, "a record");
      return await hold({ content: 0, write: (o) => (o.byte(tag), o.bytes(bytes)) });
    }
    await runBatch();
    out.byte(tag);
    copyBytes(src, out, size, "a record");
  };
  for (;;) {
    const tag = src.byte();
    const start = src.offset;
    if (tag === TAG_RAW) {
      const n = readVarint(src);
      src.seek(src.offset + n);
      await copyRecord(tag, start);
    } else if (tag === TAG_DEFLATE) {
      const record = rewrite.deflate(src);
      if (record === null) await copyRecord(tag, start);
      else await hold(record);
    } else if ((tag === TAG_PREDICTED || tag === TAG_PREDICTED_CHUNKED) && rewrite.predicted) {
      await hold(rewrite.predicted(src, tag));
    } else if (tag === TAG_END) {
      await runBatch();
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
