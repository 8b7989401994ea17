/**
 * Strict streaming reader for `multipart/form-data` request bodies (RFC 7578 over RFC 2046), as
 * browser POST uploads send them: text fields first, then one file part whose bytes may be
 * gigabytes, so they are handed on as a stream and never held.
 *
 * - Fields are yielded in order. Everything before the file's content (boundaries, part headers,
 *   values) is capped at `maxPreFileBytes`, 20 KiB by default: the AWS guide ("HTML forms") says
 *   "the form data and boundaries (excluding the contents of the file) cannot exceed 20 KB", and
 *   S3 answers MaxPostPreDataLengthExceeded beyond it. The cap also bounds our buffering.
 * - The file part is yielded last with a stream of its content. Parts after it are skipped, as
 *   S3 ignores them, but the body must still end with the closing delimiter: the file stream
 *   errors (and the upload is not stored) when the body is truncated or malformed.
 * - File bytes pass through as views of the pieces the source hands out (a request body gives a
 *   fresh buffer per read), so memory stays at about one piece whatever the file size. The only
 *   copy is a few dozen bytes where the delimiter might straddle two reads.
 * - Every framing fault is S3's MalformedPOSTRequest. errors.ts has no such code yet, so it is
 *   InvalidArgument with S3's message; the detail goes in `cause`.
 */
import { SvcError } from "../errors.ts";

/** S3's limit on everything before the file's content, in bytes. */
export const MAX_PRE_FILE_BYTES = 20 * 1024;
/** Default cap on one field's value (below the total cap unless that is raised). */
export const MAX_FIELD_BYTES = 64 * 1024;

export interface FormField {
  kind: "field";
  name: string;
  value: string;
}

export interface FormFile {
  kind: "file";
  /** The part's name as sent (matches `fileField` case-insensitively). */
  name: string;
  /** From Content-Disposition; null when the part had none (a text area upload). */
  filename: string | null;
  /** The part's own Content-Type header, if any. */
  contentType: string | null;
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
}

export function malformedForm(detail: string): SvcError {
  return new SvcError(
    "InvalidArgument",
    "The body of your POST request is not well-formed multipart/form-data.",
    {},
    { cause: new Error(detail) },
  );
}

// RFC 2046 bchars: a boundary is 1-70 of these and does not end with a space.
const BOUNDARY_CHARS = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** The boundary of a `multipart/form-data` Content-Type; throws unless there is a valid one. */
export function formBoundary(contentType: string | null): string {
  const [type, ...params] = splitParams(contentType ?? "");
  if (type.trim().toLowerCase() !== "multipart/form-data") {
    throw malformedForm(`Content-Type is "${contentType}", not multipart/form-data`);
  }
  const boundary = params.find((p) => p.name === "boundary")?.value;
  if (boundary === undefined || !BOUNDARY_CHARS.test(boundary)) {
    throw malformedForm(`missing or invalid boundary in "${contentType}"`);
  }
  return boundary;
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
  const scanner = new Scanner(source.getReader(), boundary, options);
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
      yield { kind: "field", name: part.name, value: decoder.decode(value) };
    }
  } finally {
    if (!handedOff) await scanner.cancel();
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CR = 0x0d, LF = 0x0a, DASH = 0x2d, SP = 0x20, HTAB = 0x09;
const CRLFCRLF = encoder.encode("\r\n\r\n");
/** Part headers longer than this are refused before the total cap would be reached anyway. */
const MAX_HEADER_BYTES = 8 * 1024;

/** Buffering and boundary search over the source, shared by the field phase and the file. */
class Scanner {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  /** CRLF "--" boundary: every delimiter, the first included once we pretend a CRLF precedes it. */
  readonly #delimiter: Uint8Array;
  readonly #maxPreFile: number;
  readonly #maxField: number;
  /** Unconsumed bytes; views of source pieces, or a small stitched copy. */
  #buf: Uint8Array;
  /** Source position of #buf[0] (starts at -2 for the virtual CRLF). */
  #offset = -2;
  #done = false;
  /** The file's closing delimiter has been consumed. */
  #fileEnded = false;

  constructor(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    boundary: string,
    o: FormDataOptions,
  ) {
    this.#reader = reader;
    this.#delimiter = encoder.encode(`\r\n--${boundary}`);
    this.#maxPreFile = o.maxPreFileBytes ?? MAX_PRE_FILE_BYTES;
    this.#maxField = o.maxFieldBytes ?? MAX_FIELD_BYTES;
    // The body's first delimiter has no CRLF before it; a virtual one lets one search find all.
    this.#buf = encoder.encode("\r\n");
  }

  /** Reads one more piece into #buf; false at the end of the source. */
  async #fill(): Promise<boolean> {
    const piece = await this.#read();
    if (piece === null) return false;
    this.#buf = this.#buf.length === 0 ? piece : concat(this.#buf, piece);
    return true;
  }

  async #read(): Promise<Uint8Array | null> {
    if (this.#done) return null;
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await this.#reader.read();
    } catch (err) {
      this.#done = true;
      if (err instanceof SvcError) throw err;
      throw new SvcError("IncompleteBody", "The request body ended before it was complete", {}, {
        cause: err,
      });
    }
    if (result.done) {
      this.#done = true;
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
    if (!(await this.#fill())) throw malformedForm(`body ended inside ${what}`);
  }

  checkPreFile(): void {
    if (this.#offset > this.#maxPreFile) throw preDataTooLarge(this.#maxPreFile);
  }

  /** Skips anything before the first delimiter (RFC 2046 preamble) and the delimiter itself. */
  async skipPreamble(): Promise<void> {
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) return this.#consume(at + this.#delimiter.length);
      this.#consume(Math.max(0, this.#buf.length - (this.#delimiter.length - 1)));
      await this.#fillPreFile("the preamble (no opening boundary)");
    }
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
        if (end > MAX_HEADER_BYTES) throw preDataTooLarge(this.#maxPreFile);
        const text = decoder.decode(this.#buf.subarray(0, end));
        this.#consume(end + 4);
        return text;
      }
      if (this.#buf.length > MAX_HEADER_BYTES) throw preDataTooLarge(this.#maxPreFile);
      await this.#fillPreFile("part headers");
    }
  }

  /** A field's value up to the next delimiter (which is consumed). */
  async readFieldValue(name: string): Promise<Uint8Array> {
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) {
        if (at > this.#maxField) throw fieldTooLarge(name, this.#maxField);
        const value = this.#buf.slice(0, at);
        this.#consume(at + this.#delimiter.length);
        this.checkPreFile();
        return value;
      }
      if (this.#buf.length - this.#delimiter.length > this.#maxField) {
        throw fieldTooLarge(name, this.#maxField);
      }
      await this.#fillPreFile(`field "${name}"`);
    }
  }

  /**
   * The file's content: pulled on demand, ends at the next delimiter once the rest of the body
   * has been checked up to the closing delimiter.
   */
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
    const size = this.#delimiter.length;
    const keep = size - 1;
    for (;;) {
      const at = indexOf(this.#buf, this.#delimiter);
      if (at >= 0) {
        const last = this.#buf.subarray(0, at);
        this.#consume(at + size);
        this.#fileEnded = true;
        return at === 0 ? null : last;
      }
      // No delimiter starts before the last `keep` bytes; they may begin one.
      if (this.#buf.length > keep) return this.#take(this.#buf.length - keep);
      const piece = await this.#read();
      if (piece === null) throw malformedForm("body ended inside the file (no closing boundary)");
      const tail = this.#buf;
      if (tail.length === 0 || piece.length < keep) {
        // Small pieces: stitching costs little and the search above decides.
        this.#buf = tail.length === 0 ? piece : concat(tail, piece);
        continue;
      }
      // Only the tail and the piece's first bytes are stitched, so the piece itself is never
      // copied: any delimiter starting in the tail ends within them.
      const joint = concat(tail, piece.subarray(0, keep));
      const split = indexOf(joint, this.#delimiter);
      if (split >= 0) {
        this.#buf = piece.subarray(split + size - tail.length);
        this.#offset += split + size;
        this.#fileEnded = true;
        return split === 0 ? null : tail.subarray(0, split);
      }
      // No delimiter starts in the tail: it is file content.
      this.#buf = piece;
      this.#offset += tail.length;
      return tail;
    }
  }

  #take(n: number): Uint8Array {
    const out = this.#buf.subarray(0, n);
    this.#consume(n);
    return out;
  }

  /** Skips the parts after the file (S3 ignores them) up to the closing delimiter. */
  async #skipTrailingParts(): Promise<void> {
    for (;;) {
      while (this.#buf.length < 2) {
        if (!(await this.#fill())) throw malformedForm("body ended after the file");
      }
      if (this.#buf[0] === DASH && this.#buf[1] === DASH) {
        // The epilogue, if any, is ignored: do not wait for it.
        await this.cancel();
        return;
      }
      for (;;) {
        const at = indexOf(this.#buf, this.#delimiter);
        if (at >= 0) {
          this.#consume(at + this.#delimiter.length);
          break;
        }
        this.#consume(Math.max(0, this.#buf.length - (this.#delimiter.length - 1)));
        if (!(await this.#fill())) throw malformedForm("body ended inside a part after the file");
      }
    }
  }

  async cancel(reason?: unknown): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await this.#reader.cancel(reason).catch(() => {});
  }
}

function preDataTooLarge(limit: number): SvcError {
  return new SvcError(
    "MaxPostPreDataLengthExceeded",
    `Your POST request fields preceding the upload file were too large (the limit is ${limit} bytes).`,
  );
}

function fieldTooLarge(name: string, limit: number): SvcError {
  return new SvcError(
    "MaxPostPreDataLengthExceeded",
    `The POST form field "${name}" is longer than ${limit} bytes.`,
  );
}

/** Position of `needle` in `hay` at or after `from`, or -1. */
export function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  // indexOf on one byte is native and fast; candidates are then checked in full.
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

interface Param {
  name: string;
  value: string;
}

/**
 * Splits `type; a=b; c="d"` into the leading value and its parameters (names lowercased).
 * Quoted values may contain `;`; a backslash escapes only a quote, so Windows paths sent as
 * filenames keep their backslashes (S3 takes the text after the last `\` or `/`).
 */
function splitParams(header: string): [string, ...Param[]] {
  const semi = header.indexOf(";");
  const head = semi < 0 ? header : header.slice(0, semi);
  const params: Param[] = [];
  let i = semi < 0 ? header.length : semi + 1;
  while (i < header.length) {
    const eq = header.indexOf("=", i);
    const nextSemi = header.indexOf(";", i);
    if (eq < 0 || (nextSemi >= 0 && nextSemi < eq)) {
      // A bare token without a value: skip it.
      i = nextSemi < 0 ? header.length : nextSemi + 1;
      continue;
    }
    const name = header.slice(i, eq).trim().toLowerCase();
    let j = eq + 1;
    while (header[j] === " " || header[j] === "\t") j++;
    let value = "";
    if (header[j] === '"') {
      j++;
      while (j < header.length && header[j] !== '"') {
        if (header[j] === "\\" && header[j + 1] === '"') j++;
        value += header[j++];
      }
      if (j >= header.length) throw malformedForm(`unterminated quoted value in "${header}"`);
      const end = header.indexOf(";", j);
      i = end < 0 ? header.length : end + 1;
    } else {
      const end = header.indexOf(";", j);
      value = header.slice(j, end < 0 ? header.length : end).trim();
      i = end < 0 ? header.length : end + 1;
    }
    params.push({ name, value });
  }
  return [head, ...params];
}

/** Name, filename and type of a part from its header block. */
function partOf(headerBlock: string): Omit<FormFile, "kind" | "body" | "abort"> {
  let disposition: string | null = null;
  let contentType: string | null = null;
  for (const line of headerBlock === "" ? [] : headerBlock.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw malformedForm(`bad part header line "${line}"`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value;
  }
  if (disposition === null) throw malformedForm("a part has no Content-Disposition header");
  const [type, ...params] = splitParams(disposition);
  const name = params.find((p) => p.name === "name")?.value;
  if (type.trim().toLowerCase() !== "form-data" || name === undefined) {
    throw malformedForm(`a part's Content-Disposition is "${disposition}"`);
  }
  const filename = params.find((p) => p.name === "filename")?.value ?? null;
  return { name, filename, contentType };
}
