/**
 * What makes an upload body trustworthy beyond the request signature:
 * - the SigV4 streaming chunk-signature chain (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`,
 *   AWS "Transferring Payload in Multiple Chunks" and "Including Trailing Headers"), as hooks for
 *   decodeAwsChunked (src/s3/aws-chunked.ts), which runs onChunk before releasing any byte of a
 *   chunk and onTrailers before closing: a failed check errors the stream, so a consumer that
 *   commits only on a clean close never stores a forged or corrupted body;
 * - trailer checksums (`x-amz-trailer: x-amz-checksum-<alg>`), signed or unsigned
 *   (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`);
 * - the `x-amz-checksum-<alg>` header the SDKs send with a plain (not aws-chunked) body.
 *
 * Chain: chunk n's signature is HMAC(signingKey, "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" +
 * scope + "\n" + signature(n-1) + "\n" + sha256("") + "\n" + sha256(chunk data)), seeded with the
 * request signature; the final empty chunk is signed the same way. The trailer signature is
 * HMAC(signingKey, "AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n" + signature of
 * the final chunk + "\n" + sha256 of the trailer lines as "name:value\n"). Both were checked
 * against the example values AWS publishes (chunk-signatures_test.ts).
 *
 * Every checksum algorithm S3 defines is verified (checksums.ts); an unknown one is refused
 * (InvalidRequest) rather than passed unverified.
 */

import { createHash } from "node:crypto";
import { SvcError } from "../lib/mod.ts";
import { ChecksumAccumulator, type ChecksumAlgorithm } from "./checksums/checksums.ts";
import {
  EMPTY_SHA256,
  hexEqual,
  hmacHex,
  HmacKey,
  sha256HexOf,
  signaturesEqual,
  type VerifiedRequest,
} from "../auth/mod.ts";

/** The hooks decodeAwsChunked takes (AwsChunkedOptions.onChunk / onTrailers). */
export interface ChunkHooks {
  onChunk(signature: string | undefined, data: readonly Uint8Array[]): void;
  onTrailers(trailers: ReadonlyMap<string, string>, signature: string | undefined): void;
}

const SUPPORTED: Record<string, ChecksumAlgorithm> = {
  "x-amz-checksum-crc32": "crc32",
  "x-amz-checksum-crc32c": "crc32c",
  "x-amz-checksum-crc64nvme": "crc64nvme",
  "x-amz-checksum-sha1": "sha1",
  "x-amz-checksum-sha256": "sha256",
};
/** `x-amz-checksum-*` headers that are not a checksum value. */
const NOT_VALUES = new Set([
  "x-amz-checksum-type",
  "x-amz-checksum-algorithm",
  "x-amz-checksum-mode",
]);

function mismatch(): SvcError {
  return new SvcError(
    "SignatureDoesNotMatch",
    "The request signature we calculated does not match the signature you provided. " +
      "Check your key and signing method.",
  );
}

function accumulatorFor(name: string, where: "header" | "trailer"): ChecksumAccumulator {
  const algorithm = SUPPORTED[name];
  if (algorithm) return new ChecksumAccumulator(algorithm);
  if (where === "trailer") {
    throw new SvcError(
      "InvalidRequest",
      `The value specified in the x-amz-trailer header is not supported: ${name}`,
    );
  }
  throw new SvcError("InvalidRequest", `svc does not support the checksum header ${name}`);
}

/**
 * Compares a client's base64 checksum with the computed one. The value is decoded first, so any
 * base64 spelling of the right bytes passes; a value of the wrong size is malformed, not a
 * mismatch (S3 answers InvalidRequest for it).
 */
function checkValue(
  accumulator: ChecksumAccumulator,
  name: string,
  value: string,
  where: "header" | "trailer",
): void {
  let given: string;
  try {
    given = atob(value);
  } catch {
    given = "";
  }
  const digest = accumulator.digest();
  if (given.length !== digest.length) {
    const kind = where === "header" ? "header" : "trailing header";
    throw new SvcError("InvalidRequest", `Value for ${name} ${kind} is invalid.`);
  }
  let same = true;
  for (let i = 0; i < digest.length; i++) same &&= given.charCodeAt(i) === digest[i];
  if (!same) {
    throw new SvcError(
      "BadDigest",
      `The ${accumulator.algorithm.toUpperCase()} you specified did not match the calculated checksum.`,
    );
  }
}

/** The trailers `x-amz-trailer` announces, with a running checksum for each. */
class TrailerChecksums {
  readonly #expected = new Map<string, ChecksumAccumulator>();

  constructor(trailerHeader: string | null) {
    for (const part of (trailerHeader ?? "").split(",")) {
      const name = part.trim().toLowerCase();
      if (name !== "" && !this.#expected.has(name)) {
        this.#expected.set(name, accumulatorFor(name, "trailer"));
      }
    }
  }

  get size(): number {
    return this.#expected.size;
  }

  update(data: readonly Uint8Array[]): void {
    for (const accumulator of this.#expected.values()) {
      for (const view of data) accumulator.update(view);
    }
  }

  verify(trailers: ReadonlyMap<string, string>): void {
    for (const name of trailers.keys()) {
      if (!this.#expected.has(name)) {
        throw new SvcError("InvalidRequest", `The trailer ${name} is not named in x-amz-trailer`);
      }
    }
    for (const [name, accumulator] of this.#expected) {
      const value = trailers.get(name);
      if (value === undefined) {
        throw new SvcError(
          "IncompleteBody",
          `The request body terminated unexpectedly: x-amz-trailer names ${name}, which the body ` +
            "did not carry",
        );
      }
      checkValue(accumulator, name, value, "trailer");
    }
  }
}

/** Below this many bytes a chunk is hashed in JavaScript: a node:crypto call costs more. */
const SMALL_CHUNK = 4096;

function sha256Views(data: readonly Uint8Array[]): string {
  if (data.length === 0) return EMPTY_SHA256;
  let length = 0;
  for (const view of data) length += view.length;
  if (length < SMALL_CHUNK) return sha256HexOf(data);
  const hash = createHash("sha256");
  for (const view of data) hash.update(view);
  return hash.digest("hex");
}

/**
 * Hooks verifying a signed aws-chunked body (`x-amz-content-sha256` STREAMING-AWS4-HMAC-SHA256-
 * PAYLOAD or its -TRAILER form) and, for the -TRAILER form, the checksums `x-amz-trailer` names.
 * `trailerHeader` is the request's `x-amz-trailer` value.
 */
export function chunkSignatureHooks(
  verified: VerifiedRequest,
  trailerHeader: string | null,
): ChunkHooks {
  const mode = verified.payloadHash;
  if (!mode.startsWith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD")) {
    throw new TypeError(`not a signed aws-chunked payload: ${mode}`);
  }
  const trailer = mode.endsWith("-TRAILER");
  const checksums = new TrailerChecksums(trailer ? trailerHeader : null);
  if (!trailer && (trailerHeader ?? "").trim() !== "") {
    throw new SvcError(
      "InvalidRequest",
      "x-amz-trailer needs x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    );
  }
  const prefix = `${verified.amzDate}\n${verified.scope}\n`;
  // One chunk-signature per chunk, and a chunk may be one byte: the key is prepared once.
  const key = new HmacKey(verified.signingKey);
  let previous = verified.signature;
  let ended = false;
  return {
    onChunk(signature, data) {
      if (ended) throw mismatch();
      const expected = key.hexOfAscii(
        `AWS4-HMAC-SHA256-PAYLOAD\n${prefix}${previous}\n${EMPTY_SHA256}\n${sha256Views(data)}`,
      );
      if (signature === undefined || !hexEqual(expected, signature)) throw mismatch();
      previous = expected;
      if (data.length === 0) ended = true;
      else checksums.update(data);
    },
    onTrailers(trailers, signature) {
      // A body without its final chunk never reaches here (the decoder refuses it), but the
      // chain must have ended for a trailer signature to mean anything.
      if (!ended) throw mismatch();
      if (trailer) {
        let lines = "";
        for (const [name, value] of trailers) lines += `${name}:${value}\n`;
        const expected = hmacHex(
          verified.signingKey,
          `AWS4-HMAC-SHA256-TRAILER\n${prefix}${previous}\n${
            createHash("sha256").update(lines).digest("hex")
          }`,
        );
        if (signature === undefined || !signaturesEqual(expected, signature)) throw mismatch();
      }
      checksums.verify(trailers);
    },
  };
}

/**
 * Hooks for `STREAMING-UNSIGNED-PAYLOAD-TRAILER` bodies: no signatures, only the trailer
 * checksums `x-amz-trailer` names (the JS SDK's default for streaming uploads).
 */
export function unsignedTrailerHooks(trailerHeader: string | null): ChunkHooks {
  const checksums = new TrailerChecksums(trailerHeader);
  return {
    onChunk(_signature, data) {
      checksums.update(data);
    },
    onTrailers(trailers) {
      checksums.verify(trailers);
    },
  };
}

/**
 * The checksum a plain (not aws-chunked) body must match, from its `x-amz-checksum-<alg>`
 * header. Feed every body byte to update(), then verify(); or pipe the body through transform(),
 * which errors the stream before it closes when the checksum is wrong.
 */
export class BodyChecksum {
  readonly name: string;
  readonly expected: string;
  readonly #accumulator: ChecksumAccumulator;

  private constructor(name: string, expected: string) {
    this.name = name;
    this.expected = expected;
    this.#accumulator = accumulatorFor(name, "header");
  }

  /** null when the request names no checksum; refuses several or unsupported ones. */
  static fromHeaders(headers: Headers): BodyChecksum | null {
    const found: [string, string][] = [];
    headers.forEach((value, name) => {
      if (name.startsWith("x-amz-checksum-") && !NOT_VALUES.has(name)) found.push([name, value]);
    });
    if (found.length === 0) return null;
    if (found.length > 1) {
      throw new SvcError(
        "InvalidRequest",
        "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
      );
    }
    return new BodyChecksum(found[0][0], found[0][1]);
  }

  get algorithm(): ChecksumAlgorithm {
    return this.#accumulator.algorithm;
  }

  update(data: Uint8Array): void {
    this.#accumulator.update(data);
  }

  /** Throws BadDigest (or InvalidRequest for a malformed value) unless the body matched. */
  verify(): void {
    checkValue(this.#accumulator, this.name, this.expected, "header");
  }

  transform(): TransformStream<Uint8Array, Uint8Array> {
    return new TransformStream({
      transform: (chunk, controller) => {
        this.update(chunk);
        controller.enqueue(chunk);
      },
      flush: () => this.verify(),
    });
  }
}
