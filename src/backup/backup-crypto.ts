/**
 * Optional password encryption of backup parts (WebCrypto only): a key is derived from the
 * password with PBKDF2-HMAC-SHA256 (600,000 iterations, a random 16-byte salt per backup), and
 * every part is sealed with AES-256-GCM under its own random 12-byte nonce, with the part's name
 * as additional data (a part cannot be passed off as another). The salt, iterations and nonces
 * sit in the clear manifest; GCM's tag authenticates each part, so a wrong password and a
 * tampered part fail the same way, before anything is imported.
 */
import { Buffer } from "node:buffer";

export const KDF_ITERATIONS = 600_000;
/** A password shorter than this is refused: the backup holds every secret of the instance. */
export const MIN_PASSWORD_LENGTH = 12;

export interface EncryptionInfo {
  algorithm: "AES-256-GCM";
  kdf: "PBKDF2-SHA256";
  iterations: number;
  /** base64 */
  salt: string;
}

export const toBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64");
export const fromBase64 = (text: string): Uint8Array<ArrayBuffer> =>
  new Uint8Array(Buffer.from(text, "base64"));

async function deriveKey(
  password: string,
  salt: Uint8Array<ArrayBuffer>,
  iterations: number,
): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(password),
    "PBKDF2",
    false,
    ["deriveKey"],
  );
  return await crypto.subtle.deriveKey(
    { name: "PBKDF2", hash: "SHA-256", salt, iterations },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** Seals parts under one password. */
export class PartSealer {
  readonly info: EncryptionInfo;
  readonly #key: CryptoKey;

  private constructor(info: EncryptionInfo, key: CryptoKey) {
    this.info = info;
    this.#key = key;
  }

  static async create(password: string, iterations = KDF_ITERATIONS): Promise<PartSealer> {
    const salt = crypto.getRandomValues(new Uint8Array(16));
    const info: EncryptionInfo = {
      algorithm: "AES-256-GCM",
      kdf: "PBKDF2-SHA256",
      iterations,
      salt: toBase64(salt),
    };
    return new PartSealer(info, await deriveKey(password, salt, iterations));
  }

  /** The sealed bytes and the nonce (base64) the manifest records. */
  async seal(
    name: string,
    plain: Uint8Array<ArrayBuffer>,
  ): Promise<{ bytes: Uint8Array; iv: string }> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(name) },
      this.#key,
      plain,
    );
    return { bytes: new Uint8Array(sealed), iv: toBase64(iv) };
  }
}

/** Opens parts sealed by PartSealer; `open` returns null when the tag does not verify. */
export class PartOpener {
  readonly #key: CryptoKey;

  private constructor(key: CryptoKey) {
    this.#key = key;
  }

  static async create(password: string, info: EncryptionInfo): Promise<PartOpener> {
    return new PartOpener(await deriveKey(password, fromBase64(info.salt), info.iterations));
  }

  async open(name: string, sealed: Uint8Array, iv: string): Promise<Uint8Array | null> {
    try {
      const plain = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: fromBase64(iv), additionalData: new TextEncoder().encode(name) },
        this.#key,
        new Uint8Array(sealed),
      );
      return new Uint8Array(plain);
    } catch {
      return null;
    }
  }
}
