/**
 * Sealing and opening one frame (see frame-format.ts). Each object has its own AES-256-GCM key,
 * HKDF-SHA256(master key, salt = the object's random 32-byte salt, info = FORMAT_INFO), so the
 * frame index alone is a nonce that never repeats under a key: no per-key nonce budget to track,
 * however many objects a master key seals. The additional data binds the header (key id, salt,
 * version), the frame index and the final-frame flag: a frame moved to another position or
 * object, a dropped tail, or an edited header all fail authentication.
 */
import { EncryptionError } from "./encryption-error.ts";
import { frameAad, type FrameHeader, frameNonce } from "./frame-format.ts";

const FORMAT_INFO = new TextEncoder().encode("svc aes256-gcm-proxy v1");

/** The AES-GCM key of one object. */
export function objectKey(master: CryptoKey, header: FrameHeader): Promise<CryptoKey> {
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: header.salt, info: FORMAT_INFO },
    master,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

export async function sealFrame(
  key: CryptoKey,
  header: FrameHeader,
  index: number,
  final: boolean,
  plain: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv: frameNonce(index), additionalData: frameAad(header, index, final) },
    key,
    plain,
  );
  return new Uint8Array(sealed);
}

/** The plaintext of a sealed frame; throws EncryptionError("auth") when it does not verify. */
export async function openFrame(
  key: CryptoKey,
  header: FrameHeader,
  index: number,
  final: boolean,
  sealed: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: frameNonce(index), additionalData: frameAad(header, index, final) },
      key,
      sealed,
    );
    return new Uint8Array(plain);
  } catch {
    throw new EncryptionError(
      "auth",
      `Encrypted object failed authentication at frame ${index}${final ? " (final)" : ""}: ` +
        "the stored bytes were altered, truncated or reordered",
    );
  }
}
