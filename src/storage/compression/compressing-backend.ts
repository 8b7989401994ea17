/**
 * The storage-compression layer of one backend (docs/COMPRESSION.md): a Backend decorator above
 * the encryption layer (compress, then seal) that stores delta baselines and compressible
 * passthrough objects as seekable zstd (zstd-format.ts), transparently: sizes, ETags, digests
 * and listings stay the original object's, `storedSize` is what the backend holds, and a ranged
 * GET reads only the index entries and frames its range needs.
 *
 * What is compressed is decided while staging, from the first SAMPLE_BYTES of the body (the
 * kind of object is known only at commit, the name before): a baseline (by name) when a fast
 * pass over the sample saves BASELINE_MIN_SAVINGS, any other object when its name has no
 * compressed format's extension and the sample saves PASSTHROUGH_MIN_SAVINGS. An incompressible
 * body costs one fast pass over the sample, then streams through raw. Objects below MIN_BYTES
 * and multipart extents (stageExtents, linked or sent as they are) always stay raw. Objects
 * without the `compression` record field read raw, so data written before stays readable.
 *
 * A frame that does not decode to exactly its length (zstd checksum, truncation, a damaged
 * index) is an InternalError before the first byte when it is the first frame of the read, else
 * a body that errors: never wrong bytes.
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
import {
  type CompressProgress,
  compressStream,
  decidingStream,
  joinPrefix,
  rawStream,
  readSample,
} from "./compress-stream.ts";
import { markerOf, unmarked, unmarkedMeta, withoutMarker } from "./record-marker.ts";
import { ChunkReader, decodedBody, IndexCursor } from "./decompress-stream.ts";
import { CompressionError, sampleSavings } from "./zstd-codec.ts";
import {
  type CompressionMarker,
  formatMarker,
  framesForRange,
  hasCompressedExtension,
  storedLengthOf,
} from "./zstd-format.ts";

/**
 * Uncompressed bytes per frame. A range decodes its frames whole, so smaller frames make short
 * ranges cheaper: measured on CSV at level 3, 256 KiB frames compress as well as 1 MiB ones
 * (independent frames lose little context at that size), and a 64 KiB range costs 0.5 ms
 * instead of 1.3-1.9 ms. The index costs 8 bytes per frame (32 KiB per GiB).
 */
export const FRAME_SIZE = 256 * 1024;
/**
 * Uncompressed bytes per frame of a delta baseline (a window as large, long-distance matching):
 * baselines are read whole, and release artifacts repeat content megabytes apart, so large
 * frames save far more than they cost (docs/COMPRESSION.md "Baseline frames").
 */
export const BASELINE_FRAME_SIZE = 16 << 20;
/** Bytes sampled to decide; 256 KiB decide in well under a millisecond at level 1. */
export const SAMPLE_BYTES = 256 * 1024;
/** Smaller objects stay raw: a frame and an index would save next to nothing. */
export const MIN_BYTES = 4096;
export const BASELINE_MIN_SAVINGS = 0.05;
export const PASSTHROUGH_MIN_SAVINGS = 0.10;
/** Reads retried when the object is replaced between the reads of one ranged GET. */
const RANGE_ATTEMPTS = 3;

/**
 * `auto`: baselines and compressible passthrough objects; `baselines`: delta baselines only;
 * `off`: nothing new is compressed (compressed objects stay readable).
 */
export type CompressionMode = "auto" | "baselines" | "off";

export interface CompressionSettings {
  mode: CompressionMode;
  /** zstd level of new frames (1-19). */
  level: number;
}

export interface CompressionOptions {
  /**
   * Read at every write, so a config reload applies to the next one; per bucket (a bucket with
   * `compression: false` stores what it is sent, see docs/DELTA.md).
   */
  settings: (bucket: string) => CompressionSettings;
  /** Whether `key` names a delta baseline (the delta layer's `reference.bin`). */
  isBaseline: (key: string) => boolean;
  /** Frame size of new objects (tests use small ones). */
  frameSize?: number;
  /** Frame size of new baselines (BASELINE_FRAME_SIZE; tests use small ones). */
  baselineFrameSize?: number;
}

/** Thrown inside a ranged read when the object changed between its reads: read it again. */
class Replaced extends Error {}

/** Thrown from a raw ranged read's check when the object turns out to be compressed. */
class IsCompressed extends Error {
  constructor(readonly info: ObjectInfo) {
    super(`Object "${info.key}" is compressed`);
  }
}

export class CompressingBackend implements Backend {
  readonly #frameSize: number;
  readonly #baselineFrameSize: number;

  constructor(readonly inner: Backend, private readonly options: CompressionOptions) {
    this.#frameSize = options.frameSize ?? FRAME_SIZE;
    this.#baselineFrameSize = options.baselineFrameSize ?? BASELINE_FRAME_SIZE;
  }

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
    // One damaged record fails its own reads, not the listing: it is listed as stored.
    const listed = (info: ObjectInfo) => {
      try {
        return unmarked(info);
      } catch {
        return { ...info, meta: withoutMarker(info.meta) };
      }
    };
    return { ...page, objects: page.objects.map(listed) };
  }

  scratchSealer(bucket: string): Promise<ScratchSealer | null> {
    return this.inner.scratchSealer?.(bucket) ?? Promise.resolve(null);
  }

  async getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null> {
    const outerCheck = check && ((info: ObjectInfo) => check(unmarked(info)));
    if (range === undefined) {
      const got = await this.inner.getObject(bucket, key, undefined, outerCheck);
      if (!got || got.info.meta.compression === undefined) return got;
      const marker = markerOf(got.info);
      const whole = { start: 0, end: marker.size - 1 };
      try {
        return await this.#decode(bucket, key, got.info, marker, whole, new ChunkReader(got.body));
      } catch (err) {
        await got.body.cancel().catch(() => {});
        throw failed(err instanceof Replaced ? new CompressionError(err.message) : err);
      }
    }
    for (let attempt = 0; attempt < RANGE_ATTEMPTS; attempt++) {
      // A raw object (the usual case) is read as before, in one call. A compressed one shows in
      // its record: before the backend does expensive work where it honours `check`, else in
      // the answer, or as a failure of a range past its stored bytes (InvalidRange; an S3 store
      // answers a shorter 206, which the S3 backend refuses): any failure is checked by a HEAD.
      let head: ObjectInfo;
      try {
        const got = await this.inner.getObject(bucket, key, range, (info) => {
          if (info.meta.compression !== undefined) throw new IsCompressed(info);
          outerCheck?.(info);
        });
        if (!got || got.info.meta.compression === undefined) return got;
        await got.body.cancel().catch(() => {});
        head = got.info;
      } catch (err) {
        if (err instanceof IsCompressed) head = err.info;
        else {
          const found = await this.inner.headObject(bucket, key).catch(() => null);
          if (found?.meta.compression === undefined) throw err; // a raw object's own failure
          head = found;
        }
      }
      check?.(unmarked(head));
      const marker = markerOf(head);
      if (range.start < 0 || range.end < range.start || range.end >= marker.size) {
        throw new SvcError(
          "InvalidRange",
          `Range ${range.start}-${range.end} is outside object "${key}"`,
        );
      }
      try {
        return await this.#decode(bucket, key, head, marker, range);
      } catch (err) {
        if (err instanceof Replaced) continue;
        throw failed(err);
      }
    }
    throw new SvcError("SlowDown", `Object "${key}" is being replaced too often to be read`);
  }

  /**
   * Opens logical bytes `range` of the compressed version `head`: its index entries, then its
   * frames (`frames` when the caller already holds the stored bytes from the start).
   */
  async #decode(
    bucket: string,
    key: string,
    head: ObjectInfo,
    marker: CompressionMarker,
    range: ByteRange,
    frames?: ChunkReader,
  ): Promise<ObjectBody> {
    const info = unmarked(head);
    if (marker.size === 0) {
      await frames?.cancel();
      return { info, body: new ReadableStream({ start: (c) => c.close() }) };
    }
    const { first, last } = framesForRange(marker.frameSize, range);
    const readRange = async (stored: ByteRange): Promise<Uint8Array> => {
      const got = await this.inner.getObject(bucket, key, stored);
      if (!got || !sameVersion(got.info, head)) {
        await got?.body.cancel().catch(() => {});
        throw new Replaced(`Object "${key}" was replaced while it was read`);
      }
      return await new ChunkReader(got.body).read(stored.end - stored.start + 1);
    };
    const cursor = new IndexCursor(marker, readRange, first, last);
    const start = await cursor.open();
    if (!frames) {
      const end = cursor.knownEnd() ?? marker.indexOffset;
      const got = await this.inner.getObject(bucket, key, { start, end: end - 1 });
      if (!got || !sameVersion(got.info, head)) {
        await got?.body.cancel().catch(() => {});
        throw new Replaced(`Object "${key}" was replaced while it was read`);
      }
      frames = new ChunkReader(got.body);
    }
    const what = `"${key}"`;
    const body = await decodedBody(marker, range, cursor, frames, what, failed);
    return { info, body };
  }

  async stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    expectedSize?: number,
  ): Promise<StagedObject> {
    const settings = this.options.settings(bucket);
    const baseline = this.options.isBaseline(key);
    const candidate = settings.mode !== "off" &&
      (baseline || (settings.mode === "auto" && !hasCompressedExtension(key))) &&
      (expectedSize === undefined || expectedSize >= MIN_BYTES);
    if (!candidate) {
      const staged = await this.inner.stageObject(bucket, key, body, signal, expectedSize);
      return new MarkedStagedObject(staged, () => staged.size);
    }
    // The sample is read when the backend starts reading the body, so a refusal (NoSuchBucket)
    // still comes before any of it is read.
    const reader = body.getReader();
    const progress: CompressProgress = { plainBytes: 0, storedBytes: 0, done: false };
    const frameSize = baseline ? this.#baselineFrameSize : this.#frameSize;
    const decision = { compressed: false };
    const stream = decidingStream(reader, async () => {
      const sample = await readSample(reader, SAMPLE_BYTES);
      const minSavings = baseline ? BASELINE_MIN_SAVINGS : PASSTHROUGH_MIN_SAVINGS;
      decision.compressed = !(sample.ended && sample.bytes < MIN_BYTES) &&
        sampleSavings(joinPrefix(sample.chunks, SAMPLE_BYTES)) >= minSavings;
      return decision.compressed
        ? compressStream(sample.chunks, reader, {
          frameSize,
          level: settings.level,
          long: baseline,
        }, progress)
        : rawStream(sample.chunks, reader, progress);
    });
    let staged: StagedObject;
    try {
      staged = await this.inner.stageObject(bucket, key, stream, signal);
    } catch (err) {
      await reader.cancel(err).catch(() => {});
      throw err;
    }
    return new MarkedStagedObject(staged, () => progress.plainBytes, (meta) => {
      if (!decision.compressed) return undefined;
      if (!progress.done || meta.size !== progress.plainBytes) {
        throw new Error(
          `Compressed staging of "${key}" holds ${progress.plainBytes} bytes, its record says ` +
            `${meta.size}`,
        );
      }
      return {
        frameSize,
        indexOffset: progress.storedBytes,
        size: meta.size,
        md5: meta.md5,
      };
    });
  }

  async updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null> {
    // The stored bytes stay as they are, so their marker (and stored size) must too.
    const updated = await this.inner.updateObjectMeta(bucket, key, (stored) => {
      const next = withoutMarker(update(unmarkedMeta(stored)));
      if (stored.compression === undefined) return next;
      return { ...next, size: stored.size, md5: stored.md5, compression: stored.compression };
    });
    return unmarked(updated);
  }

  async stageExtents(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null> {
    // Extents are linked or sent as they are: stored raw.
    if (!this.inner.stageExtents) return null;
    const staged = await this.inner.stageExtents(bucket, key, extents, signal);
    return staged && new MarkedStagedObject(staged, () => staged.size);
  }
}

/** Whether two infos describe the same stored version of a key. */
function sameVersion(a: ObjectInfo, b: ObjectInfo): boolean {
  return a.meta.etag === b.meta.etag && a.meta.sha256 === b.meta.sha256 &&
    a.meta.lastModified === b.meta.lastModified && a.meta.compression === b.meta.compression;
}

/** A decode failure as the S3 error a client gets. */
function failed(err: unknown): unknown {
  return err instanceof CompressionError
    ? new SvcError("InternalError", err.message, {}, { cause: err })
    : err;
}

/**
 * A staged object whose commit records how its bytes were stored, whatever meta the caller
 * passes (a copy hands over its source's meta), and whose size is the logical one.
 */
class MarkedStagedObject implements StagedObject {
  constructor(
    private readonly staged: StagedObject,
    private readonly sizeOf: () => number,
    /** The marker of the bytes staged; undefined when they are raw. */
    private readonly markerFor?: (meta: ObjectMeta) => CompressionMarker | undefined,
  ) {}

  get size(): number {
    return this.sizeOf();
  }

  async commit(meta: ObjectMeta, condition?: WriteCondition): Promise<ObjectInfo> {
    const plain = withoutMarker(meta);
    const marker = this.markerFor?.(plain);
    if (!marker) return unmarked(await this.staged.commit(plain, condition));
    const stored: ObjectMeta = {
      ...plain,
      size: storedLengthOf(marker),
      md5: "",
      compression: formatMarker(marker),
    };
    return unmarked(await this.staged.commit(stored, condition));
  }

  abort(): Promise<void> {
    return this.staged.abort();
  }
}
