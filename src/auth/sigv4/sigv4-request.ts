/**
 * The shapes of SigV4 authentication: what a request offers to be checked, what the client
 * claims (sigv4-parse.ts reads it), and what verification proved (sigv4.ts). The canonical forms
 * (sigv4-canonical.ts) and the streaming chunk signatures (body/chunk-signatures.ts) build on
 * them.
 */
import type { Principal } from "../../iam/mod.ts";

export const ALGORITHM = "AWS4-HMAC-SHA256";
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

export interface SignedRequestInput {
  method: string;
  /** The path exactly as sent (splitRawUrl), still percent-encoded. */
  rawPath: string;
  /** The query exactly as sent, without `?`. */
  rawQuery: string;
  headers: Headers;
}

export interface SignedRequest {
  presigned: boolean;
  accessKeyId: string;
  /** `<yyyymmdd>/<region>/s3/aws4_request` */
  scope: string;
  region: string;
  /** The request time, `YYYYMMDDTHHMMSSZ`, as it enters the string to sign. */
  amzDate: string;
  /** Milliseconds since the epoch of amzDate. */
  time: number;
  /** The signed header names, in the order the client listed them. */
  signedHeaders: string[];
  signature: string;
  /** Presigned only: X-Amz-Expires in seconds. */
  expires?: number;
  /** The canonical request's last line: x-amz-content-sha256, or UNSIGNED-PAYLOAD presigned. */
  payloadHash: string;
}

export interface VerifiedRequest {
  principal: Principal;
  accessKeyId: string;
  presigned: boolean;
  signingKey: Uint8Array;
  /** The request signature (lowercase hex): the seed of a streaming chunk-signature chain. */
  signature: string;
  scope: string;
  amzDate: string;
  /** Milliseconds since the epoch of amzDate (replay memory lasts while it can verify). */
  requestTime: number;
  /** What the body must honour: a hex sha256, UNSIGNED-PAYLOAD or a STREAMING-* marker. */
  payloadHash: string;
}
