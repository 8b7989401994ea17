/**
 * Strict streaming decoder for `Content-Encoding: aws-chunked` request bodies.
 *
 * Wire format (AWS "sigv4-streaming" and "sigv4-streaming-trailers"; checked against bytes
 * captured from @aws-sdk/client-s3 v3 and against the Rust SDK's encoder):
 *
 *   <hex-size>[;chunk-signature=<sig>]\r\n<size bytes>\r\n     repeated, size > 0
 *   0[;chunk-signature=<sig>]\r\n                              the final chunk
 *   <name>:<value>\r\n                                         trailer lines (TRAILER variants)
 *   x-amz-trailer-signature:<sig>\r\n                          signed TRAILER variant, last line
 *   \r\n                                                       end of body; nothing may follow
 *
 * The non-trailer variant is the same with no trailer lines (`0;chunk-signature=…\r\n\r\n`).
 * The JS SDK sends `STREAMING-UNSIGNED-PAYLOAD-TRAILER` with lowercase hex sizes, one chunk per
 * source read (sizes vary), and `0\r\nx-amz-checksum-crc32:…\r\n\r\n`; the Rust SDK sends
 * uppercase hex and 64 KiB chunks. Both cases are accepted. SigV4a (ECDSA) chunk signatures are
 * the hex DER signature right-padded with `*` to 144 characters (aws-c-auth).
 *
 * Design, so a signature verifier can sit on top without this file knowing any keys:
 * - Without `onChunk`, data is passed through as subarray views of the pieces read from the
 *   source, as soon as they arrive: no copying, memory bounded by one piece. Small views of one
 *   source piece are handed on as one piece (see Coalescer): only those are copied.
 * - With `onChunk`, the views of one chunk are held until the chunk and its CRLF are complete,
 *   then `onChunk(signature, views)` runs (the final empty chunk included, with no views), and
 *   only after it resolves are the views released downstream. If it throws, the output stream
 *   errors with that error and nothing of the chunk was released. Memory: one chunk (capped by
 *   `maxBufferedChunk`).
 * - `onTrailers(trailers, trailerSignature)` runs after the terminating CRLF and the source's
 *   end, before the output stream closes, so a failed trailer check (signature or checksum)
 *   still errors the stream: a consumer that commits only on a clean close never commits it.
 * - The views share memory with the source pieces; that is safe because a request body hands
 *   out a fresh buffer per read. The only copy is stitching a header or trailer line split
 *   across reads (at most MAX_LINE bytes).
 *
 * Errors: every framing fault, truncation and length mismatch is `IncompleteBody`. That is what
 * AWS S3 itself answers for malformed aws-chunked bodies (bad size, missing CRLF, missing or
 * malformed chunk-signature, truncated body: S3's answers as reported in versitygw issues
 * #1660, #1666, #1685), so clients see the same code here. The detail goes in the message.
 * Not enforced: S3's 8 KiB minimum for non-final chunks (InvalidChunkSizeError), since the JS
 * SDK itself sends smaller chunks unless asked to buffer.
 */

import { SvcError } from "../lib/mod.ts";
import { type ChunkedFraming, ChunkedParser, incomplete } from "./aws-chunked-parser.ts";

/** What an `x-amz-content-sha256` value says about an aws-chunked body. */
export interface StreamingMode {
  /** Every chunk line carries a chunk-signature (and trailers end with a trailer signature). */
  signed: boolean;
  /** Trailer lines follow the final chunk. */
  trailer: boolean;
  /** Signatures are SigV4a (ECDSA P-256) rather than HMAC-SHA256. */
  ecdsa: boolean;
}

const STREAMING_MODES: Record<string, StreamingMode> = {
  "STREAMING-UNSIGNED-PAYLOAD-TRAILER": { signed: false, trailer: true, ecdsa: false },
  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD": { signed: true, trailer: false, ecdsa: false },
  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER": { signed: true, trailer: true, ecdsa: false },
  "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD": { signed: true, trailer: false, ecdsa: true },
  "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER": { signed: true, trailer: true, ecdsa: true },
};

/** The aws-chunked mode an `x-amz-content-sha256` value announces, or undefined if none. */
export function streamingMode(contentSha256: string): StreamingMode | undefined {
  const mode = STREAMING_MODES[contentSha256];
  return mode ? { ...mode } : undefined;
}

export interface AwsChunkedOptions extends ChunkedFraming {
  /** Sees the trailers and the trailer signature before the output stream closes. */
  onTrailers?: (
    trailers: ReadonlyMap<string, string>,
    signature: string | undefined,
  ) => void | Promise<void>;
}

export interface AwsChunkedDecoded {
  /** The decoded payload. Errors with an SvcError on any fault; closes only on a clean end. */
  stream: ReadableStream<Uint8Array>;
  /** Trailer lines (lowercased names, without x-amz-trailer-signature) once the body is done. */
  trailers: Promise<Map<string, string>>;
}

/** Decoded views shorter than this are gathered into one piece per source read. */
const COALESCE_BELOW = 1024;

/**
 * Gathers small decoded views into one output piece per source read (copied into one buffer,
 * at most the read's size); a view of COALESCE_BELOW bytes or more goes on as it is. A body of
 * many tiny chunks then costs the consumer one enqueue, hash update and write per network read
 * instead of one per chunk, while a body of large chunks keeps its zero-copy views.
 */
class Coalescer {
  #views: Uint8Array[] = [];
  #bytes = 0;

  add(view: Uint8Array, emit: (data: Uint8Array) => void): void {
    if (view.length === 0) return;
    if (view.length >= COALESCE_BELOW) {
      this.flush(emit);
      emit(view);
      return;
    }
    this.#views.push(view);
    this.#bytes += view.length;
  }

  /** Emits the gathered views, if any, as one piece. */
  flush(emit: (data: Uint8Array) => void): void {
    const views = this.#views;
    if (views.length === 0) return;
    if (views.length === 1) emit(views[0]);
    else {
      const joined = new Uint8Array(this.#bytes);
      let offset = 0;
      for (const view of views) {
        joined.set(view, offset);
        offset += view.length;
      }
      emit(joined);
    }
    this.#views = [];
    this.#bytes = 0;
  }
}

/** Anything the source throws (a dropped connection) is a truncated body to the client. */
function asSvcError(err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  const error = incomplete("reading the request body failed");
  return new SvcError(error.code, error.message, {}, { cause: err });
}

/**
 * Decodes an aws-chunked body. See the file header for the framing, the hooks and the errors.
 * Errors thrown by onChunk/onTrailers reach the output stream unchanged.
 */
export function decodeAwsChunked(
  body: ReadableStream<Uint8Array>,
  options: AwsChunkedOptions,
): AwsChunkedDecoded {
  const parser = new ChunkedParser(options);
  const coalescer = new Coalescer();
  const reader = body.getReader();
  const { promise: trailers, resolve, reject } = Promise.withResolvers<Map<string, string>>();
  // Callers that only read the stream must not get an unhandled rejection from here.
  trailers.catch(() => {});

  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let emitted = false;
      const emit = (data: Uint8Array) => {
        controller.enqueue(data);
        emitted = true;
      };
      const add = (data: Uint8Array) => coalescer.add(data, emit);
      try {
        // A pull must enqueue or close before returning, or the stream stalls.
        while (!emitted) {
          let result: ReadableStreamReadResult<Uint8Array>;
          try {
            result = await reader.read();
          } catch (err) {
            throw asSvcError(err);
          }
          if (result.done) {
            parser.finish();
            await options.onTrailers?.(parser.trailers, parser.trailerSignature);
            resolve(parser.trailers);
            controller.close();
            return;
          }
          await parser.push(result.value, add);
          coalescer.flush(emit);
        }
      } catch (err) {
        // Chunks verified before the fault were released, as without coalescing.
        coalescer.flush((data) => controller.enqueue(data));
        reject(err);
        controller.error(err);
        reader.cancel(err).catch(() => {});
      }
    },
    async cancel(reason) {
      reject(reason ?? incomplete("the decoded stream was cancelled"));
      await reader.cancel(reason);
    },
  });
  return { stream, trailers };
}
