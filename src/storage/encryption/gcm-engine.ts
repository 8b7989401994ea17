/**
 * Which AES-256-GCM implementation seals and opens frames. Both produce the same bytes (the
 * format is plain AES-256-GCM: ciphertext || 16-byte tag, 96-bit nonce), so the choice is only
 * about cost:
 *
 * - `openssl`: the system's libcrypto over FFI (openssl-gcm.ts), synchronous, ~0.3 CPU-s/GiB.
 *   Used when it loads and passes a known-answer check against WebCrypto at first use.
 * - `webcrypto`: Deno's crypto.subtle, asynchronous, ~3.5-4 CPU-s/GiB here; the fallback where
 *   libcrypto is missing (or FFI is not allowed). Frames are then opened many at once, since
 *   one WebCrypto call at a time leaves the cipher idle while JS waits.
 *
 * An ObjectCipher holds one object's key (HKDF of the master key and the object's salt, see
 * frame-crypto.ts) and the object's header (the start of every frame's additional data).
 */
import { getLogger } from "../../observability/mod.ts";
import { EncryptionError } from "./encryption-error.ts";
import { frameAad, type FrameHeader, frameNonce, TAG_SIZE } from "./frame-format.ts";
import { loadOpenSsl, OpenSslGcm, tuneMallocForStreaming } from "../../native/mod.ts";

export type GcmEngineName = "openssl" | "webcrypto";

export interface ObjectCipher {
  /** True when seal/open finish before returning (no promise): the caller need not pipeline. */
  readonly synchronous: boolean;
  /** Seals frame `index` of `plain` into `out` (plain.length + 16 bytes). */
  seal(index: number, final: boolean, plain: Uint8Array, out: Uint8Array): void | Promise<void>;
  /**
   * Opens sealed frame `index` into `out` (sealed.length - 16 bytes); throws
   * EncryptionError("auth") when it does not verify, after zeroing `out`.
   */
  open(index: number, final: boolean, sealed: Uint8Array, out: Uint8Array): void | Promise<void>;
  /** Releases native state; the cipher cannot be used afterwards. Idempotent. */
  dispose(): void;
}

export interface GcmEngine {
  readonly name: GcmEngineName;
  /** A cipher for one object; `key` (32 bytes) is wiped once the cipher holds it. */
  cipher(key: Uint8Array<ArrayBuffer>, header: FrameHeader): Promise<ObjectCipher>;
}

function authFailure(index: number, final: boolean): EncryptionError {
  return new EncryptionError(
    "auth",
    `Encrypted object failed authentication at frame ${index}${final ? " (final)" : ""}: ` +
      "the stored bytes were altered, truncated or reordered",
  );
}

export const webCryptoEngine: GcmEngine = {
  name: "webcrypto",
  async cipher(key, header) {
    const aesKey = await crypto.subtle.importKey("raw", key, "AES-GCM", false, [
      "encrypt",
      "decrypt",
    ]);
    key.fill(0);
    return {
      synchronous: false,
      async seal(index, final, plain, out) {
        const sealed = await crypto.subtle.encrypt(
          {
            name: "AES-GCM",
            iv: frameNonce(index),
            additionalData: frameAad(header, index, final),
          },
          aesKey,
          plain as Uint8Array<ArrayBuffer>,
        );
        out.set(new Uint8Array(sealed));
      },
      async open(index, final, sealed, out) {
        let plain: ArrayBuffer;
        try {
          plain = await crypto.subtle.decrypt(
            {
              name: "AES-GCM",
              iv: frameNonce(index),
              additionalData: frameAad(header, index, final),
            },
            aesKey,
            sealed as Uint8Array<ArrayBuffer>,
          );
        } catch {
          out.fill(0);
          throw authFailure(index, final);
        }
        out.set(new Uint8Array(plain));
      },
      dispose() {},
    };
  },
};

export const openSslEngine: GcmEngine = {
  name: "openssl",
  cipher(key, header) {
    let gcm: OpenSslGcm;
    try {
      gcm = new OpenSslGcm(key);
    } finally {
      key.fill(0);
    }
    // Nonce and additional data are rebuilt in place per frame: only the index and flag change.
    const nonce = frameNonce(0);
    const nonceView = new DataView(nonce.buffer);
    const aad = frameAad(header, 0, false);
    const aadView = new DataView(aad.buffer);
    const at = (index: number, final: boolean) => {
      nonceView.setBigUint64(4, BigInt(index));
      aadView.setBigUint64(aad.length - 9, BigInt(index));
      aad[aad.length - 1] = final ? 1 : 0;
    };
    return Promise.resolve({
      synchronous: true,
      seal(index, final, plain, out) {
        at(index, final);
        gcm.seal(nonce, aad, plain, out);
      },
      open(index, final, sealed, out) {
        at(index, final);
        if (!gcm.open(nonce, aad, sealed, out)) {
          out.subarray(0, Math.max(0, sealed.length - TAG_SIZE)).fill(0);
          throw authFailure(index, final);
        }
      },
      dispose() {
        gcm.free();
      },
    });
  },
};

let chosen: Promise<GcmEngine> | undefined;

/** The engine to use in this process: OpenSSL when it loads and agrees with WebCrypto. */
export function gcmEngine(): Promise<GcmEngine> {
  return chosen ??= chooseGcmEngine();
}

/** OpenSSL when `openSsl` loaded and agrees with WebCrypto (tests pass a missing one). */
export async function chooseGcmEngine(openSsl = loadOpenSsl()): Promise<GcmEngine> {
  const log = getLogger("svc::encryption");
  const tuning = tuneMallocForStreaming();
  log.info(
    tuning === null
      ? "aes256-gcm-proxy: malloc left at its defaults (not glibc, or FFI not allowed)"
      : `aes256-gcm-proxy: ${tuning} (decrypted batches reuse warm memory)`,
  );
  if (openSsl === null) {
    log.warn(
      "aes256-gcm-proxy: OpenSSL libcrypto not found (or FFI not allowed); AES-GCM runs " +
        "through WebCrypto, at about ten times the CPU",
    );
    return webCryptoEngine;
  }
  const problem = await disagreement(openSslEngine, webCryptoEngine);
  if (problem !== null) {
    log.warn(
      `aes256-gcm-proxy: ${openSsl.name} failed its self-check (${problem}); using WebCrypto`,
    );
    return webCryptoEngine;
  }
  log.info(`aes256-gcm-proxy: AES-GCM through OpenSSL (${openSsl.name})`);
  return openSslEngine;
}

/**
 * Why `candidate` cannot stand in for `reference`, or null when it can: both must seal the same
 * frames to the same bytes, open each other's, and refuse a flipped byte, including an empty
 * final frame.
 */
export async function disagreement(
  candidate: GcmEngine,
  reference: GcmEngine,
): Promise<string | null> {
  try {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const header = {
      keyId: "self-check",
      salt: new Uint8Array(32),
      bytes: crypto.getRandomValues(new Uint8Array(104)),
    };
    const a = await candidate.cipher(key.slice(), header);
    const b = await reference.cipher(key.slice(), header);
    try {
      for (const [index, size] of [[0, 1000], [7, 65536], [1 << 20, 0]]) {
        const plain = crypto.getRandomValues(new Uint8Array(size));
        const final = size === 0;
        const sealedA = new Uint8Array(size + TAG_SIZE);
        const sealedB = new Uint8Array(size + TAG_SIZE);
        await a.seal(index, final, plain, sealedA);
        await b.seal(index, final, plain, sealedB);
        if (!sealedA.every((byte, i) => byte === sealedB[i])) return "sealed bytes differ";
        const opened = new Uint8Array(size);
        await a.open(index, final, sealedB, opened);
        if (!opened.every((byte, i) => byte === plain[i])) return "opened bytes differ";
        for (const flip of [0, sealedA.length - 1]) {
          const bad = sealedB.slice();
          bad[flip] ^= 1;
          if (await opens(a, index, final, bad)) return "a flipped byte was accepted";
        }
        if (await opens(a, index, !final, sealedB)) return "a wrong final flag was accepted";
      }
    } finally {
      a.dispose();
      b.dispose();
    }
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

async function opens(
  cipher: ObjectCipher,
  index: number,
  final: boolean,
  sealed: Uint8Array,
): Promise<boolean> {
  try {
    await cipher.open(index, final, sealed, new Uint8Array(sealed.length - TAG_SIZE));
    return true;
  } catch {
    return false;
  }
}
