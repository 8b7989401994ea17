/**
 * The keys of one backend's `aes256-gcm-proxy` encryption: the current key (writes and reads)
 * and the optional legacy key (reads only), each with its id. Reads pick the key by the id the
 * object carries, never by the current mode, so objects written under an older key or before
 * encryption was turned on stay readable.
 *
 * Key material lives only in non-extractable CryptoKeys; ids are not secret (they are stamped on
 * every object and appear in errors). An absent `key_id` is derived from SHA-256 of the backend
 * name followed by the key's hex, truncated to 16 hex characters: stable across restarts, unique
 * per backend and key, and revealing nothing useful about the key.
 */
import { createHash } from "node:crypto";
import type { EncryptionConfig } from "../../config/mod.ts";
import { EncryptionError } from "./encryption-error.ts";

export interface KeyEntry {
  id: string;
  /** The master key, imported for HKDF: per-object keys derive from it (see frame-crypto.ts). */
  master: CryptoKey;
}

/** What a write does on this backend. */
export type WriteMode = "plaintext" | "aes256-gcm-proxy";

export class KeyRing {
  constructor(
    readonly backendName: string,
    readonly writeMode: WriteMode,
    readonly current?: KeyEntry,
    readonly legacy?: KeyEntry,
  ) {}

  /** The ring a backend's encryption block describes (absent block: plaintext, no keys). */
  static async fromConfig(
    backendName: string,
    block: EncryptionConfig | undefined,
  ): Promise<KeyRing> {
    const current = block?.key === undefined
      ? undefined
      : await importKey(block.key_id ?? deriveKeyId(backendName, block.key), block.key);
    const legacy = block?.legacy_key === undefined ? undefined : await importKey(
      block.legacy_key_id ?? deriveKeyId(backendName, block.legacy_key),
      block.legacy_key,
    );
    const writeMode = block?.mode === "aes256-gcm-proxy" ? "aes256-gcm-proxy" : "plaintext";
    if (writeMode === "aes256-gcm-proxy" && !current) {
      throw new Error(`Backend "${backendName}": mode aes256-gcm-proxy needs a key`);
    }
    return new KeyRing(backendName, writeMode, current, legacy);
  }

  /** The key that decrypts an object stamped with `keyId`; throws naming both ids otherwise. */
  forRead(keyId: string): KeyEntry {
    if (this.current?.id === keyId) return this.current;
    if (this.legacy?.id === keyId) return this.legacy;
    const known = [this.current?.id, this.legacy?.id].filter((id) => id !== undefined);
    throw new EncryptionError(
      "key-mismatch",
      `Object is encrypted with key id "${keyId}" but backend "${this.backendName}" has ` +
        (known.length === 0
          ? "no encryption key configured"
          : `key id ${known.map((id) => `"${id}"`).join(" and legacy key id ")}`),
    );
  }
}

/** The default key id of `keyHex` on backend `name` (see the header). */
export function deriveKeyId(name: string, keyHex: string): string {
  return createHash("sha256").update(name + keyHex).digest("hex").slice(0, 16);
}

async function importKey(id: string, keyHex: string): Promise<KeyEntry> {
  const raw = new Uint8Array(32);
  for (let i = 0; i < 32; i++) raw[i] = parseInt(keyHex.slice(i * 2, i * 2 + 2), 16);
  const master = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveBits"]);
  raw.fill(0);
  return { id, master };
}
