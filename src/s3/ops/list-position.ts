/**
 * Sealed listing positions. A filtered listing (IAM) that read its bound of hidden keys without
 * filling its page ends there, truncated, and must resume after the last key it read; that key
 * is hidden, so the continuation token (v2) or NextMarker (v1) carries it encrypted under a key
 * of this process (AES-256-GCM), never in clear. Such a position names a place to resume, not an
 * entry returned, so the listing resumes right after it without rolling it up into a common
 * prefix. A restart (or another instance behind the same address) cannot open it: it answers
 * InvalidArgument as any malformed token does, and the client lists again.
 */
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const SEALED = "svc1.";
const KEY = randomBytes(32);

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** Encrypts a listing position (a hidden key) for a token or marker. */
export function sealPosition(position: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", KEY, iv);
  const body = Buffer.concat([cipher.update(position, "utf8"), cipher.final()]);
  return SEALED + base64url(Buffer.concat([iv, body, cipher.getAuthTag()]));
}

/** `svc1.` and the base64url of a 12-byte IV, a ciphertext and a 16-byte tag. */
const SEALED_SHAPE = /^svc1\.[A-Za-z0-9_-]{38,}$/;

/**
 * Is `text` shaped as a sealed position (whether or not this process can open it)? A v1 marker of
 * this shape that does not open is refused rather than read as a key (it would resume at a wrong
 * place); a real key of this shape is not a plausible name.
 */
export function looksSealed(text: string): boolean {
  return SEALED_SHAPE.test(text);
}

/** The position `text` seals, or undefined when it is not one this process sealed. */
export function openPosition(text: string): string | undefined {
  if (!looksSealed(text)) return undefined;
  try {
    const bytes = fromBase64url(text.slice(SEALED.length));
    if (bytes.length < 28) return undefined;
    const decipher = createDecipheriv("aes-256-gcm", KEY, bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    const plain = Buffer.concat([
      decipher.update(bytes.subarray(12, bytes.length - 16)),
      decipher.final(),
    ]);
    return new TextDecoder("utf-8", { fatal: true }).decode(plain);
  } catch {
    return undefined;
  }
}
