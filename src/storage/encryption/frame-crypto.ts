/**
 * One object's cipher. Each object has its own AES-256-GCM key, HKDF-SHA256(master key, salt =
 * the object's random 32-byte salt, info = FORMAT_INFO), so the frame index alone is a nonce that
 * never repeats under a key: no per-key nonce budget to track, however many objects a master key
 * seals. The additional data binds the header (key id, salt, version), the frame index and the
 * final-frame flag: a frame moved to another position or object, a dropped tail, or an edited
 * header all fail authentication. Sealing and opening are in gcm-engine.ts.
 */
import type { FrameHeader } from "./frame-format.ts";
import { type GcmEngine, gcmEngine, type ObjectCipher } from "./gcm-engine.ts";

const FORMAT_INFO = new TextEncoder().encode("svc aes256-gcm-proxy v1");

/**
 * The cipher of the object `header` describes. The derived key bytes live only until the engine
 * holds them (then they are wiped); `master` must allow "deriveBits".
 */
export async function objectCipher(
  master: CryptoKey,
  header: FrameHeader,
  engine?: GcmEngine,
): Promise<ObjectCipher> {
  const bits = await crypto.subtle.deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: header.salt, info: FORMAT_INFO },
    master,
    256,
  );
  return await (engine ?? await gcmEngine()).cipher(new Uint8Array(bits), header);
}
