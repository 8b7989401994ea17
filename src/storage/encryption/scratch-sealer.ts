/**
 * svc's local working copies of an encrypted backend's bytes (multipart parts in flight) sealed
 * at rest exactly as the backend's objects are: each copy is one sealed "object" of the frame
 * format (its own header, salt and per-copy key under the backend's current master key), so the
 * frame code, the engine and the key ring serve it unchanged and nothing about the format is new.
 * A copy is opened by the key id recorded with it, current or legacy, like any object.
 */
import type { ScratchSealer } from "../backend.ts";
import { decryptedStream, FrameDecryptor, parseHeaderOrFail } from "./decrypt-stream.ts";
import { EncryptionError } from "./encryption-error.ts";
import { encryptStream } from "./encrypt-stream.ts";
import { objectCipher } from "./frame-crypto.ts";
import { HEADER_SIZE, newHeader, plainSizeOf } from "./frame-format.ts";
import type { GcmEngine } from "./gcm-engine.ts";
import type { KeyRing } from "./key-ring.ts";
import { ExactReader } from "./pipeline.ts";

export class KeyRingScratchSealer implements ScratchSealer {
  constructor(
    private readonly keys: KeyRing,
    /** Counts a decrypt failure and turns it into the error callers see (InternalError). */
    private readonly failed: (err: unknown) => unknown,
    private readonly engine?: GcmEngine,
  ) {}

  get keyId(): string | undefined {
    return this.keys.writeMode === "plaintext" ? undefined : this.keys.current?.id;
  }

  async seal(plain: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>> {
    const current = this.keys.current;
    if (this.keyId === undefined || !current) return plain;
    const header = newHeader(current.id);
    return encryptStream(plain, await objectCipher(current.master, header, this.engine), header);
  }

  async open(
    stored: ReadableStream<Uint8Array>,
    sealed: { keyId: string; storedSize: number; size: number },
  ): Promise<ReadableStream<Uint8Array>> {
    const { keyId, storedSize, size } = sealed;
    const reader = new ExactReader(stored);
    let decryptor: FrameDecryptor | undefined;
    try {
      if (plainSizeOf(storedSize) !== size) {
        throw new EncryptionError(
          "truncated",
          `Sealed working copy is damaged: ${storedSize} stored bytes cannot hold its ${size} ` +
            "bytes of plaintext",
        );
      }
      const entry = this.keys.forRead(keyId);
      const header = parseHeaderOrFail(await reader.read(HEADER_SIZE));
      if (header.keyId !== keyId) {
        throw new EncryptionError(
          "header",
          `Sealed working copy's header names key id "${header.keyId}", its record "${keyId}"`,
        );
      }
      const cipher = await objectCipher(entry.master, header, this.engine);
      decryptor = new FrameDecryptor(reader, { cipher, size, start: 0, end: size - 1 });
      return decryptedStream(decryptor, null, (err) => this.failed(err));
    } catch (err) {
      await (decryptor ? decryptor.cancel(err) : reader.cancel(err));
      throw this.failed(err);
    }
  }
}
