/**
 * Streams a rebuild copies instead of re-running the deflate model. The members of a zip (or the
 * members of a multi-member gzip) mostly stay the same from one version to the next, and a
 * predicted record (predicted-record.ts) holds everything its stream is rebuilt from: two records
 * with the same bytes rebuild the same compressed bytes. An archive baseline keeps the archive's
 * own bytes, so once its token form is derived (or written by the PUT), each predicted record's
 * digest is known with the place of its stream in the archive; a contraction against that
 * baseline then copies the stream of every record with a known digest (form-contract.ts) and runs
 * the model only for the members that changed. The rebuilt archive is still checked whole against
 * its sha256, as every contraction is.
 */
import { createHash } from "node:crypto";
import { readAt } from "./byte-io.ts";

/** A predicted record's digest and where its stream lies in the baseline archive. */
export interface MemoStream {
  digest: string;
  offset: number;
  length: number;
}

/** What a contraction may copy from: the baseline archive's file and its known streams. */
export interface StreamMemo {
  archivePath: string;
  streams: MemoStream[];
}

/** The written span of one predicted record in a form: its stream's index among the form's. */
export interface RecordSpan {
  stream: number;
  from: number;
  to: number;
}

/**
 * A form with fewer predicted streams is not remembered: a gzip's single stream is the same only
 * when the whole archive is, and leasing the archive for it would cost every read.
 */
export const MEMO_MIN_STREAMS = 2;

/** The digest of a predicted record's bytes (its tag through its content). */
export function recordDigest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * The memo streams of a form just written at `formPath`: each predicted record's span digested,
 * with its stream's place in the archive (`ranges`: start and end offsets of each stream in the
 * archive, in the form's order). None for fewer than MEMO_MIN_STREAMS (not read at all).
 */
export function spanDigests(
  formPath: string,
  spans: RecordSpan[],
  ranges: number[],
): MemoStream[] | undefined {
  if (spans.length < MEMO_MIN_STREAMS) return undefined;
  const streams: MemoStream[] = [];
  using file = Deno.openSync(formPath);
  for (const { stream, from, to } of spans) {
    const start = ranges[2 * stream];
    const end = ranges[2 * stream + 1];
    if (start === undefined || end === undefined) {
      throw new Error(
        `Stream ${stream} has no place in the archive (${ranges.length / 2} streams)`,
      );
    }
    const bytes = readAt(file, from, to - from, "a predicted record");
    streams.push({ digest: recordDigest(bytes), offset: start, length: end - start });
  }
  return streams;
}

/** The known streams of derived baseline forms, by the form's sha256 (in this process only). */
export class StreamMemos {
  readonly #byForm = new Map<string, { archiveSha256: string; streams: MemoStream[] }>();

  /** At most `limit` forms are remembered (the least recently used goes first). */
  constructor(readonly limit = 64) {}

  /** Remembers a form's streams (not fewer than MEMO_MIN_STREAMS). */
  remember(formSha256: string, archiveSha256: string, streams: MemoStream[] | undefined): void {
    if (streams === undefined || streams.length < MEMO_MIN_STREAMS) return;
    this.#byForm.delete(formSha256);
    this.#byForm.set(formSha256, { archiveSha256, streams });
    while (this.#byForm.size > this.limit) {
      this.#byForm.delete(this.#byForm.keys().next().value!);
    }
  }

  /** The archive and streams known for a derived form, if any. */
  of(formSha256: string): { archiveSha256: string; streams: MemoStream[] } | undefined {
    const known = this.#byForm.get(formSha256);
    if (known === undefined) return undefined;
    this.#byForm.delete(formSha256);
    this.#byForm.set(formSha256, known);
    return known;
  }
}
