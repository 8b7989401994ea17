/**
 * The upload body of a request in the shape the object service wants: a plain byte stream of the
 * object's content, its declared length, and the digests the client vouched for. aws-chunked
 * bodies (every current SDK's default for streamed uploads) are unframed here, strictly.
 */
import { BodyChecksum, chunkSignatureHooks, unsignedTrailerHooks } from "./chunk-signatures.ts";
import { emptyStream, lendChunk, READ_BUFFER_BYTES, SvcError, takeReadBuffer } from "../lib/mod.ts";
import { decodeAwsChunked } from "./aws-chunked.ts";
import { validateContentMd5 } from "./checksums/content-md5.ts";
import type { VerifiedRequest } from "../auth/mod.ts";

export interface UploadBody {
  stream: ReadableStream<Uint8Array>;
  /** Logical length when the client declared one. */
  length?: number;
  expectedMd5?: string;
  expectedSha256?: string;
}

/**
 * What assembling an upload body reads of a request: its headers, its raw body, and what
 * authentication verified (the signed payload hash and, for aws-chunked, the signature chain).
 * An S3 request is one.
 */
export interface UploadRequest {
  readonly headers: Headers;
  readonly raw: { readonly body: ReadableStream<Uint8Array> | null };
  readonly auth?: { readonly verified?: VerifiedRequest };
}

const STREAMING_PREFIX = "STREAMING-";
const HEX_SHA256 = /^[0-9a-f]{64}$/;

function declaredLength(value: string | null, header: string): number | undefined {
  if (value === null) return undefined;
  if (!/^\d+$/.test(value.trim())) {
    throw new SvcError(
      "InvalidArgument",
      `Header ${header} must be a non-negative integer, got "${value}"`,
    );
  }
  const length = Number(value);
  // Past 2^53 a length has no exact number: no body that long can be received either.
  if (!Number.isSafeInteger(length)) {
    throw new SvcError(
      "InvalidArgument",
      `Header ${header} is too large to be a body length, got "${value}"`,
      { ArgumentName: header, ArgumentValue: value },
    );
  }
  return length;
}

/** Smallest read buffer, used once the declared length is reached (to see the end). */
const MIN_READ_BYTES = 16 * 1024;

/**
 * The request body with read failures (the client went away, or sent fewer bytes than its
 * Content-Length) turned into IncompleteBody: a client fault, never an internal error.
 * It reads with a BYOB reader into buffers of up to 1 MiB: Deno's default reader hands out 64 KiB
 * chunks, and every chunk costs a trip through each stream of the upload pipeline and a file
 * write (a 512 MiB PUT: 8,200 chunks against 520). The buffer is sized by what the declared
 * length still expects, so a small body does not allocate a megabyte; a full megabyte comes from
 * the recycled read buffers and its chunk is lent (see http/read-buffers.ts).
 */
function clientBody(
  raw: ReadableStream<Uint8Array>,
  declared: number | undefined,
  /** Whether full-megabyte chunks may be lent (no stage after this one keeps chunks). */
  lend: boolean,
): ReadableStream<Uint8Array> {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = raw.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: plain chunks.
  }
  const reader = byob ?? raw.getReader();
  let received = 0;
  const read = (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    if (!byob) return (reader as ReadableStreamDefaultReader<Uint8Array>).read();
    const expected = declared === undefined ? READ_BUFFER_BYTES : declared - received;
    const size = Math.min(READ_BUFFER_BYTES, Math.max(MIN_READ_BYTES, expected));
    return byob.read(size === READ_BUFFER_BYTES && lend ? takeReadBuffer() : new Uint8Array(size));
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await read();
      } catch (err) {
        throw err instanceof SvcError ? err : new SvcError(
          "IncompleteBody",
          "The request body ended before the number of bytes the request declared",
          {},
          { cause: err },
        );
      }
      if (result.done) controller.close();
      else {
        received += result.value.byteLength;
        if (byob && lend) lendChunk(result.value);
        controller.enqueue(result.value);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** Content-Length as sent on the wire, for sizing reads only (validated elsewhere). */
function wireLength(value: string | null): number | undefined {
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}

export function uploadBody(request: UploadRequest): UploadBody {
  const headers = request.headers;
  const verified = request.auth?.verified;
  // The signed payload hash: the header, or a presigned URL's query parameter.
  const contentSha256 = verified?.payloadHash ?? headers.get("x-amz-content-sha256") ?? "";
  const encoding = (headers.get("content-encoding") ?? "").toLowerCase();
  // The payload hash says whether the body is framed. `Content-Encoding: aws-chunked` alone
  // decides only when there is no payload hash at all (authentication none); beside a plain hash
  // (or UNSIGNED-PAYLOAD) the body is plain, as S3 takes it, and the label is not stored.
  const chunked = contentSha256.startsWith(STREAMING_PREFIX) ||
    (contentSha256 === "" && encoding.split(",").some((part) => part.trim() === "aws-chunked"));
  const md5Header = headers.get("content-md5");
  const expectedMd5 = validateContentMd5(md5Header) ?? undefined;
  // The aws-chunked decoder cuts and keeps parts of its input chunks: those are never lent.
  const raw = request.raw.body
    ? clientBody(request.raw.body, wireLength(headers.get("content-length")), !chunked)
    : emptyStream();

  if (!chunked) {
    // x-amz-checksum-<alg> on a plain body (what SDKs send by default) is checked as it streams.
    const checksum = BodyChecksum.fromHeaders(headers);
    return {
      stream: checksum ? raw.pipeThrough(checksum.transform()) : raw,
      length: declaredLength(headers.get("content-length"), "Content-Length"),
      expectedMd5,
      expectedSha256: HEX_SHA256.test(contentSha256) ? contentSha256 : undefined,
    };
  }

  const decodedLength = declaredLength(
    headers.get("x-amz-decoded-content-length"),
    "x-amz-decoded-content-length",
  );
  if (decodedLength === undefined) {
    throw new SvcError(
      "MissingContentLength",
      "You must provide the x-amz-decoded-content-length header with an aws-chunked body",
    );
  }
  const mode = contentSha256 || "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
  if (!mode.startsWith(STREAMING_PREFIX)) {
    throw new SvcError(
      "InvalidArgument",
      `x-amz-content-sha256 "${contentSha256}" cannot describe an aws-chunked body`,
    );
  }
  const signed = !mode.startsWith("STREAMING-UNSIGNED");
  const trailer = mode.endsWith("-TRAILER");
  const trailerHeader = headers.get("x-amz-trailer");
  // Signed chunks are verified against the request's signature chain; with authentication
  // none there is no chain to check, but trailer checksums still are.
  const hooks = signed && verified
    ? chunkSignatureHooks(verified, trailerHeader)
    : trailer
    ? unsignedTrailerHooks(trailerHeader)
    : undefined;
  const decoded = decodeAwsChunked(raw, {
    decodedLength,
    signed,
    trailer,
    onChunk: hooks?.onChunk,
    onTrailers: hooks?.onTrailers,
  });
  // Trailer faults error the body stream itself, so nothing with bad framing is ever stored.
  decoded.trailers.catch(() => {});
  return { stream: decoded.stream, length: decodedLength, expectedMd5 };
}
