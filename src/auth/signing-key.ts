/**
 * SigV4 key derivation and HMAC helpers shared by header, presigned, streaming-chunk and
 * POST-policy verification. Derived keys are cached per (secret, date, region, service): they
 * change once a day, and deriving one costs four HMACs.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export function hmac(key: Uint8Array | string, data: string): Uint8Array {
  return new Uint8Array(createHmac("sha256", key).update(data, "utf8").digest());
}

export function hmacHex(key: Uint8Array | string, data: string): string {
  return createHmac("sha256", key).update(data, "utf8").digest("hex");
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The hex sha256 of an empty payload. */
export const EMPTY_SHA256 = sha256Hex("");

const cache = new Map<string, Uint8Array>();
const CACHE_LIMIT = 1024;

/** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
export function signingKey(
  secret: string,
  date: string,
  region: string,
  service: string,
): Uint8Array {
  const id = `${sha256Hex(secret)}/${date}/${region}/${service}`;
  const cached = cache.get(id);
  if (cached) return cached;
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(id, key);
  return key;
}

/** Compares two hex signatures in constant time (for equal lengths). */
export function signaturesEqual(expected: string, given: string): boolean {
  const a = new TextEncoder().encode(expected);
  const b = new TextEncoder().encode(given.toLowerCase());
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
