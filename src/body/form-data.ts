/**
 * Strict streaming reader for `multipart/form-data` bodies (RFC 7578 over RFC 2046) as browser
 * POST uploads send them: text fields, then one file part of any size, handed on as a stream.
 *
 * - Fields are yielded in order. Everything before the file's content is capped at
 *   `maxPreFileBytes`, 20 KiB by default: the AWS guide ("HTML forms") says "the form data and
 *   boundaries (excluding the contents of the file) cannot exceed 20 KB" (S3 answers
 *   MaxPostPreDataLengthExceeded). The cap also bounds our buffering.
 * - The file part comes last. Parts after it are skipped (S3 ignores them), but the body must end
 *   with the closing delimiter, else the file stream errors and the upload is not stored.
 * - File bytes pass through as views of the pieces the source hands out (a request body gives a
 *   fresh buffer per read), so memory stays at about one piece whatever the file size. Only the
 *   bytes that could start a delimiter straddling two reads are held back, so pieces go on whole
 *   (splitting each would double the writes downstream: measured at half the throughput).
 * - Every framing fault is S3's MalformedPOSTRequest (form-part-headers.ts); the detail goes in
 *   `cause`.
 */
import { SvcError } from "../lib/mod.ts";
import { indexOf, partialDelimiterAtEnd } from "./byte-search.ts";
import { malformedForm, type PartHeading, partOf } from "./form-part-headers.ts";

/** S3's limit on everything before the file's content, in bytes. */
export const MAX_PRE_FILE_BYTES = 20 * 1024;
/** Default cap on one field's value (below the total cap unless that is raised). */
export const MAX_FIELD_BYTES = 64 * 1024;

export interface FormField {
  kind: "field";
  name: string;
  value: string;
}

export interface FormFile extends PartHeading {
  kind: "file";
  body: ReadableStream<Uint8Array>;
  /**
   * Stops reading the request, even while `body` is locked by a consumer that will never read
   * it again (a pipe left behind by a write that failed before its first read).
   */
  abort(reason?: unknown): Promise<void>;
}

export type FormPart = FormField | FormFile;

export interface FormDataOptions {
  maxPreFileBytes?: number;
  maxFieldBytes?: number;
  /** Name of the part that carries the upload, compared case-insensitively. Default "file". */
  fileField?: string;
  /** Aborting cancels the source and fails any pending read with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Reads the form: yields each field, then the file part (and stops). The caller must read or
 * cancel the file's body. Stopping early (breaking out of the loop) cancels the source.
 */
export async function* readFormData(
  source: ReadableStream<Uint8Array>,
  boundary: string,
  options: FormDataOptions = {},
): AsyncGenerator<FormPart, void, undefined> {
  const scanner = new Scanner(source, boundary, options);
  let handedOff = false;
  try {
    await scanner.skipPreamble();
    for (;;) {
      if (await scanner.atFinalDelimiter()) return;
      const headers = await scanner.readPartHeaders();
      const part = partOf(headers);
      if (part.name.toLowerCase() === (options.fileField ?? "file").toLowerCase()) {
        scanner.checkPreFile();
        handedOff = true;
        const abort = (reason?: unknown) => scanner.cancel(reason);
        yield { kind: "file", ...part, body: scanner.fileStream(), abort };
        return;
      }
      const value = await scanner.readFieldValue(part.name);
      yield { kind: "field", name: part.name, value: fieldText(part.name, value) };
    }
  } finally {
    if (!handedOff) await scanner.cancel();
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A field's value as text. Invalid UTF-8 is refused, never replaced by U+FFFD: a key, a policy
 * condition or the `tagging` document must be exactly the bytes that were sent.
 */
function fieldText(name: string, value: Uint8Array): string {
  try {
    return strictUtf8.decode(value);
  } catch {
    throw new SvcError("MalformedPOSTRequest", `The form field "${name}" is not valid UTF-8`);
  }
}
const CR = 0x0d, LF = 0x0a, DASH = 0x2d, SP = 0x20, HTAB = 0x09;
const CRLFCRLF = encoder.encode("\r\n\r\n");

/** Buffering and boundary search over the source, shared by the field phase and the file. */
class Scanner {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  /** CRLF "--" boundary. The first has no CRLF before it: #buf starts with a virtual one. */
  readonly #delimiter: Uint8Array;
  readonly #maxPreFile: number;
  readonly #maxField: number;
  /** Unconsumed bytes: views of source pieces, or a stitched copy. */
  #buf: Uint8Array = encoder.encode("\r\n");
  /** Source position of #buf[0] (-2: the virtual CRLF). */
  #offset = -2;
  #done = false;
  #fileEnded = false;
  readonly #signal?: AbortSignal;
  // A client that stops sending leaves a read pending forever; only a cancel wakes it.
  readonly #onAbort = () => void this.cancel(this.#signal?.reason);

  constructor(source: ReadableStream<Uint8Array>, boundary: string, o: FormDataOptions) {
    this.#reader = source.getReader();
    this.#delimiter = encoder.encode(`\r\n--${boundary}`);
    this.#maxPreFile = o.maxPreFileBytes ?? MAX_PRE_FILE_BYTES;
    this.#maxField = o.maxFieldBytes ?? MAX_FIELD_BYTES;
    this.#signal = o.signal;
    this.#signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** Appends the next piece to #buf; the source ending here makes the body malformed. */
  async #more(where: string): Promise<void> {
    const piece = await this.#read();
    if (piece === null) throw malformedForm(`body ended ${where}`);
    this.#buf = this.#buf.length === 0 ? piece : concat(this.#buf, piece);
  }

  async #read(): Promise<Uint8Array | null> {
    if (this.#done) {
      this.#signal?.throwIfAborted();
      return null;
    }
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await this.#reader.read();
      this.#signal?.throwIfAborted();
    } catch (err) {
      await this.cancel(err);
      if (err instanceof SvcError || err === this.#signal?.reason) throw err;
      throw new SvcError("IncompleteBody", "The request body ended before it was complete", {}, {
        cause: err,
      });
    }
    if (result.done) {
      await this.cancel();
      return null;
    }
    return result.value;
  }

  #consume(n: number): void {
    this.#buf = this.#buf.subarray(n);
    this.#offset += n;
  }

  /** Reads more while in the field phase, refusing once the pre-file cap cannot be met. */
  async #fillPreFile(what: string): Promise<void> {
    // Anything found from here on would end past the cap.
    if (this.#offset + this.#buf.length > this.#maxPreFile + this.#delimiter.length + 4) {
      throw preDataTooLarge(this.#maxPreFile);
    }
    await this.#more(`inside ${what}`);
  }

  checkPreFile(): void {
    if (this.#offset > this.#maxPreFile) throw preDataTooLarge(this.#maxPreFile);
  }

  /** Discards bytes up to and including the next delimiter; `more` reads or throws. */
  async #skipPastDelimiter(more: () => Promise<void>): Promise<void> {
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) return this.#consume(at + this.#delimiter.length);
      this.#consume(Math.max(0, this.#buf.length - (this.#delimiter.length - 1)));
      await more();
    }
  }

  /** Skips anything before the first delimiter (RFC 2046 preamble) and the delimiter itself. */
  skipPreamble(): Promise<void> {
    return this.#skipPastDelimiter(() => this.#fillPreFile("the preamble (no opening boundary)"));
  }

  /**
   * After a delimiter: true for the closing one (`--`), else checks the rest of the delimiter
   * line (optional transport padding, CRLF) and leaves #buf at the part's headers.
   */
  async atFinalDelimiter(): Promise<boolean> {
    while (this.#buf.length < 2) await this.#fillPreFile("a boundary line");
    if (this.#buf[0] === DASH && this.#buf[1] === DASH) return true;
    let i = 0;
    for (;;) {
      while (i < this.#buf.length && (this.#buf[i] === SP || this.#buf[i] === HTAB)) i++;
      if (i + 2 <= this.#buf.length) break;
      await this.#fillPreFile("a boundary line");
    }
    if (this.#buf[i] !== CR || this.#buf[i + 1] !== LF) {
      throw malformedForm("a boundary is not followed by CRLF or --");
    }
    this.#consume(i + 2);
    return false;
  }

  /** The part's header block, up to and without the blank line. */
  async readPartHeaders(): Promise<string> {
    for (;;) {
      // No headers at all: the blank line comes first.
      if (this.#buf.length >= 2 && this.#buf[0] === CR && this.#buf[1] === LF) {
        this.#consume(2);
        return "";
      }
      const end = indexOf(this.#buf, CRLFCRLF);
      if (end >= 0) {
        const text = decoder.decode(this.#buf.subarray(0, end));
        this.#consume(end + 4);
        return text;
      }
      await this.#fillPreFile("part headers");
    }
  }

  /** A field's value up to the next delimiter (which is consumed). */
  async readFieldValue(name: string): Promise<Uint8Array> {
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) {
        if (at > this.#maxField) throw preDataTooLarge(this.#maxField, name);
        const value = this.#buf.slice(0, at);
        this.#consume(at + this.#delimiter.length);
        this.checkPreFile();
        return value;
      }
      if (this.#buf.length - this.#delimiter.length > this.#maxField) {
        throw preDataTooLarge(this.#maxField, name);
      }
      await this.#fillPreFile(`field "${name}"`);
    }
  }

  /** The file's content, pulled on demand; it ends once the closing delimiter has been seen. */
  fileStream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const chunk = await this.#nextFileChunk();
          if (chunk !== null) return controller.enqueue(chunk);
          await this.#skipTrailingParts();
          controller.close();
        } catch (err) {
          await this.cancel(err);
          throw err;
        }
      },
      cancel: (reason) => this.cancel(reason),
    }, { highWaterMark: 0 });
  }

  /** Next run of file bytes, or null once the file's closing delimiter has been consumed. */
  async #nextFileChunk(): Promise<Uint8Array | null> {
    if (this.#fileEnded) return null;
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) {
        const last = this.#buf.subarray(0, at);
        this.#consume(at + this.#delimiter.length);
        this.#fileEnded = true;
        return at === 0 ? null : last;
      }
      // Only a tail that could begin a delimiter is held back, so nearly every piece goes on
      // whole, as a view: no copy, and no sliver of a chunk costing its own write downstream.
      const held = partialDelimiterAtEnd(this.#buf, this.#delimiter);
      const out = this.#buf.subarray(0, this.#buf.length - held);
      this.#consume(out.length);
      if (out.length > 0) return out;
      // Rare (the previous piece ended like a delimiter's start): a copy settles it.
      await this.#more("inside the file (no closing boundary)");
    }
  }

  /** Skips the parts after the file (S3 ignores them) up to the closing delimiter. */
  async #skipTrailingParts(): Promise<void> {
    const more = () => this.#more("after the file, unclosed");
    for (;;) {
      while (this.#buf.length < 2) await more();
      // The epilogue after the closing delimiter, if any, is ignored: do not wait for it.
      if (this.#buf[0] === DASH && this.#buf[1] === DASH) return await this.cancel();
      await this.#skipPastDelimiter(more);
    }
  }

  async cancel(reason?: unknown): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#signal?.removeEventListener("abort", this.#onAbort);
    await this.#reader.cancel(reason).catch(() => {});
  }
}

function preDataTooLarge(limit: number, field?: string): SvcError {
  const what = field ? `field "${field}" was` : "fields preceding the upload file were";
  const message = `Your POST request ${what} too large (the limit is ${limit} bytes).`;
  return new SvcError("MaxPostPreDataLengthExceeded", message);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
