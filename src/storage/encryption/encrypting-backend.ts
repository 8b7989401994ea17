/**
 * The encryption layer of one backend: a Backend decorator below the delta store (which computes
 * deltas on plaintext) and above the real backend, so every stored byte (passthrough objects,
 * baselines, deltas) goes through it. Writes follow the backend's current mode; reads follow what
 * each object says (its `encryptionKeyId` meta field, `svc-encryption-key-id` on S3), so plaintext
 * objects written before encryption was turned on, and objects under the legacy key, stay
 * readable. Sizes, ETags and digests in the meta record are always the plaintext's; `storedSize`
 * is what the backend holds. The wire format is in frame-format.ts and docs/ENCRYPTION.md.
 *
 * Failure before the first byte: the header and the first batch of frames of a read (up to
 * BATCH_FRAMES frames, 960 KiB) are verified before getObject returns, so a key mismatch, a bad
 * header or damage near the start is an InternalError answer (500); an object that small is
 * entirely verified first. Damage further into a large body can only be found once the bytes
 * before it were sent: the body stream then errors, the connection is cut short of its
 * Content-Length, and the client sees a broken download, never unverified bytes.
 */
import { SvcError } from "../../lib/mod.ts";
import type {
  Backend,
  BucketEntry,
  ByteRange,
  DeleteCondition,
  ListOptions,
  ListPage,
  LocalExtent,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  ScratchSealer,
  StagedObject,
  WriteCondition,
} from "../backend.ts";
import { decryptedStream, FrameDecryptor, parseHeaderOrFail } from "./decrypt-stream.ts";
import { type DecryptFailure, EncryptionError } from "./encryption-error.ts";
import { encryptStream } from "./encrypt-stream.ts";
import { objectCipher } from "./frame-crypto.ts";
import {
  framesForRange,
  HEADER_SIZE,
  newHeader,
  plainSizeOf,
  storedSizeOf,
} from "./frame-format.ts";
import type { GcmEngine } from "./gcm-engine.ts";
import type { KeyRing } from "./key-ring.ts";
import { ExactReader } from "./pipeline.ts";
import { KeyRingScratchSealer } from "./scratch-sealer.ts";

/** Reads retried when the object is replaced between the reads of one ranged GET. */
const RANGE_ATTEMPTS = 3;

export class EncryptingBackend implements Backend {
  constructor(
    readonly inner: Backend,
    readonly keys: KeyRing,
    private readonly onFailure: (reason: DecryptFailure) => void = () => {},
    /** The AES-GCM implementation; by default the process's (gcm-engine.ts), tests pick one. */
    private readonly engine?: GcmEngine,
  ) {}

  get kind(): Backend["kind"] {
    return this.inner.kind;
  }

  listBuckets(): Promise<BucketEntry[]> {
    return this.inner.listBuckets();
  }

  headBucket(bucket: string): Promise<BucketEntry | null> {
    return this.inner.headBucket(bucket);
  }

  createBucket(bucket: string): Promise<void> {
    return this.inner.createBucket(bucket);
  }

  deleteBucket(bucket: string): Promise<void> {
    return this.inner.deleteBucket(bucket);
  }

  async headObject(bucket: string, key: string): Promise<ObjectInfo | null> {
    return unmarked(await this.inner.headObject(bucket, key));
  }

  deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean> {
    return this.inner.deleteObject(bucket, key, condition);
  }

  async listObjects(bucket: string, options: ListOptions): Promise<ListPage> {
    const page = await this.inner.listObjects(bucket, options);
    return { ...page, objects: page.objects.map((info) => unmarked(info)) };
  }

  async getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null> {
    if (range === undefined) {
      const got = await this.inner.getObject(
        bucket,
        key,
        undefined,
        check && ((info) => check(unmarked(info))),
      );
      const keyId = got?.info.meta.encryptionKeyId;
      if (!got || keyId === undefined) return got && { ...got, info: unmarked(got.info) };
      const reader = new ExactReader(got.body);
      const size = await this.#sealedSize(got.info, reader);
      return await this.#decrypt(got.info, size, reader, 0, size - 1);
    }
    for (let attempt = 0; attempt < RANGE_ATTEMPTS; attempt++) {
      const head = await this.inner.headObject(bucket, key);
      if (!head) return null;
      if (head.meta.encryptionKeyId === undefined) {
        const got = await this.inner.getObject(
          bucket,
          key,
          range,
          check && ((info) => check(unmarked(info))),
        );
        if (!got) return null;
        if (got.info.meta.encryptionKeyId === undefined) {
          return { ...got, info: unmarked(got.info) };
        }
        await got.body.cancel().catch(() => {}); // encrypted in between: read it again
        continue;
      }
      check?.(unmarked(head));
      const size = await this.#sealedSize(head);
      if (range.start < 0 || range.end < range.start || range.end >= size) {
        throw new SvcError(
          "InvalidRange",
          `Range ${range.start}-${range.end} is outside object "${key}"`,
        );
      }
      const frames = framesForRange(range.start, range.end, size);
      // One read when the frames follow the header; else the header and the frames apart.
      const reads = frames.first === 0
        ? [this.inner.getObject(bucket, key, { start: 0, end: frames.storedEnd })]
        : [
          this.inner.getObject(bucket, key, { start: 0, end: HEADER_SIZE - 1 }),
          this.inner.getObject(bucket, key, { start: frames.storedStart, end: frames.storedEnd }),
        ];
      const got = await Promise.all(reads);
      if (got.some((one) => one === null || !sameVersion(one.info, head))) {
        await Promise.all(got.map((one) => one?.body.cancel().catch(() => {})));
        continue; // replaced between the head and the reads
      }
      const [first, second] = got as ObjectBody[];
      const headerReader = new ExactReader(first.body);
      const framesReader = second ? new ExactReader(second.body) : headerReader;
      return await this.#decrypt(head, size, framesReader, range.start, range.end, headerReader);
    }
    throw new SvcError("SlowDown", `Object "${key}" is being replaced too often to be read`);
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    const current = this.keys.current;
    if (this.keys.writeMode === "plaintext" || !current) {
      const staged = await this.inner.stageObject(bucket, key, body, signal, expectedSize);
      return new MarkedStagedObject(staged, () => staged.size, undefined);
    }
    const header = newHeader(current.id);
    const cipher = await objectCipher(current.master, header, this.engine);
    const progress = { plainBytes: 0 };
    const stored = encryptStream(body, cipher, header, progress);
    let staged: StagedObject;
    try {
      staged = await this.inner.stageObject(
        bucket,
        key,
        stored,
        signal,
        expectedSize === undefined ? undefined : storedSizeOf(expectedSize),
      );
    } catch (err) {
      cipher.dispose(); // the stream disposes it when it ends; this covers a refusal before
      throw err;
    }
    return new MarkedStagedObject(staged, () => progress.plainBytes, current.id);
  }

  async updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    // The stored bytes stay as they are, so their encryption marker must too.
    const updated = await this.inner.updateObjectMeta(
      bucket,
      key,
      (stored) => withMarker(update(withMarker(stored, undefined)), stored.encryptionKeyId),
    );
    return unmarked(updated);
  }

  async stageExtents(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null> {
    // Extents are linked or sent as they are: only possible when nothing is encrypted.
    if (this.keys.writeMode !== "plaintext" || !this.inner.stageExtents) return null;
    const staged = await this.inner.stageExtents(bucket, key, extents, signal);
    return staged && new MarkedStagedObject(staged, () => staged.size, undefined);
  }

  /** Multipart parts in flight are sealed like the objects they become (scratch-sealer.ts). */
  scratchSealer(_bucket: string): Promise<ScratchSealer> {
    return Promise.resolve(
      new KeyRingScratchSealer(this.keys, (err) => this.#failed(err), this.engine),
    );
  }

  /**
   * Opens an encrypted object's body: header, key by its id, then the first frames verified
   * before returning. `headerReader` is the stream holding the header when it is not `reader`.
   */
  async #decrypt(
    info: ObjectInfo,
    size: number,
    reader: ExactReader,
    start: number,
    end: number,
    headerReader: ExactReader = reader,
  ): Promise<ObjectBody> {
    let decryptor: FrameDecryptor | undefined;
    try {
      const keyId = info.meta.encryptionKeyId!;
      const entry = this.keys.forRead(keyId);
      const header = parseHeaderOrFail(await headerReader.read(HEADER_SIZE));
      if (header.keyId !== keyId) {
        throw new EncryptionError(
          "header",
          `Encrypted object's header names key id "${header.keyId}" but its metadata "${keyId}"`,
        );
      }
      if (headerReader !== reader) await headerReader.cancel();
      const cipher = await objectCipher(entry.master, header, this.engine);
      decryptor = new FrameDecryptor(reader, { cipher, size, start, end });
      const first = await decryptor.next();
      const body = decryptedStream(decryptor, first, (err) => this.#failed(err));
      return { info: unmarked(info), body };
    } catch (err) {
      await (decryptor ? decryptor.cancel(err) : reader.cancel(err));
      if (headerReader !== reader) await headerReader.cancel(err);
      throw this.#failed(err);
    }
  }

  /**
   * The plaintext size of a sealed object (see plainSizeOf); a failure when there is none, or
   * when a passthrough object's record says otherwise. Most truncations leave a stored size that
   * is itself a valid (smaller) object's, and the layers above resolve ranges against the
   * record's size: without this check a suffix range of a truncated object fell outside the
   * sealed size and answered 416 InvalidRange, a client error, for what is damage. (A delta's
   * or a baseline's record holds the logical size of the object it rebuilds, not its own.)
   */
  async #sealedSize(info: ObjectInfo, reader?: ExactReader): Promise<number> {
    const size = plainSizeOf(info.storedSize);
    const recorded = info.meta.storage === "passthrough" ? info.meta.size : undefined;
    if (size !== null && (recorded === undefined || recorded === size)) return size;
    await reader?.cancel();
    throw this.#failed(
      new EncryptionError(
        "truncated",
        size === null
          ? `Encrypted object "${info.key}" is truncated: ${info.storedSize} stored bytes are ` +
            "no whole number of frames"
          : `Encrypted object "${info.key}" is truncated or damaged: its ${info.storedSize} ` +
            `stored bytes hold ${size} bytes of plaintext, its record says ${recorded}`,
      ),
    );
  }

  /** Counts a decrypt failure and turns it into the S3 error a client gets. */
  #failed(err: unknown): unknown {
    if (!(err instanceof EncryptionError)) return err;
    this.onFailure(err.reason);
    return new SvcError("InternalError", err.message);
  }
}

/** Whether two infos describe the same stored version of a key. */
function sameVersion(a: ObjectInfo, b: ObjectInfo): boolean {
  return a.meta.etag === b.meta.etag && a.meta.sha256 === b.meta.sha256 &&
    a.meta.lastModified === b.meta.lastModified &&
    a.meta.encryptionKeyId === b.meta.encryptionKeyId;
}

/**
 * `info` as the layers above see it: without the marker, which this layer alone sets and reads
 * (so a record read here and committed elsewhere never claims bytes are sealed when they are not),
 * but with the transient `sealed` flag (the delta caches keep no plaintext of sealed bytes).
 */
function unmarked<T extends ObjectInfo | null>(info: T): T {
  if (!info || info.meta.encryptionKeyId === undefined) return info;
  return { ...info, meta: withMarker(info.meta, undefined), sealed: true };
}

/** `meta` with the encryption marker of the bytes it describes (none: plaintext). */
function withMarker(meta: ObjectMeta, keyId: string | undefined): ObjectMeta {
  const { encryptionKeyId: _drop, ...rest } = meta;
  return keyId === undefined ? rest : { ...rest, encryptionKeyId: keyId };
}

/**
 * A staged object whose commit records how its bytes were stored, whatever meta the caller
 * passes (a copy hands over its source's meta, marker included), and whose size is the
 * plaintext's.
 */
class MarkedStagedObject implements StagedObject {
  constructor(
    private readonly staged: StagedObject,
    private readonly sizeOf: () => number,
    private readonly keyId: string | undefined,
  ) {}

  get size(): number {
    return this.sizeOf();
  }

  async commit(meta: ObjectMeta, condition?: WriteCondition): Promise<ObjectInfo> {
    return unmarked(await this.staged.commit(withMarker(meta, this.keyId), condition));
  }

  abort(): Promise<void> {
    return this.staged.abort();
  }
}
