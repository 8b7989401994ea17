/**
 * The checks behind the scrub and the delta verify, one stored object at a time, reading below
 * the delta layer (so a rebuilt-object cache can never answer for the stored bytes):
 *
 * - a passthrough object is read and hashed; its sha256 (and size) must match its metadata;
 * - a baseline is downloaded into a local scratch file and hashed against its metadata;
 * - a delta is rebuilt by the codec from that baseline file and its stored bytes, into a scratch
 *   file that is hashed against the logical sha256 the delta's metadata records.
 *
 * Every backend byte goes through the run's Pacer. Scratch files live in `scratchDir` (emptied at
 * start by the caller) and are deleted after use; the baseline of the last deltaspace is kept for
 * the deltas that follow it.
 */
import { createHash } from "node:crypto";
import { referenceNameFor } from "../../delta/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import { type Backend, isStoredDataDamage, type ObjectInfo } from "../../storage/mod.ts";
import type { Pacer } from "./pacer.ts";
import { metaString } from "./stored-names.ts";

export type RawBackend = Pick<Backend, "listObjects" | "headObject" | "getObject">;

/** Rebuilds a delta into `outPath` from a local baseline file (the codec, in the codec pool). */
export type DeltaDecoder = (
  baselinePath: string,
  delta: ReadableStream<Uint8Array>,
  outPath: string,
  /** The delta's stored size (the read is paced: a timeout must allow for it). */
  deltaBytes: number,
  signal?: AbortSignal,
  /** The delta's `transform` metadata (an archive's token form): the decoder contracts it. */
  transform?: string,
  /**
   * The delta's `codec` metadata (the codec that wrote it; absent: xdelta3), its logical size,
   * and the baseline's `baselineForm` (the codecs use a form derived from the stored baseline).
   */
  written?: { codec?: string; size: number; baselineForm?: string },
) => Promise<void>;

export type CheckOutcome =
  | "ok"
  | "corrupt"
  | "missing_baseline"
  | "corrupt_baseline"
  | "unrebuildable"
  | "unreadable"
  | "unchecked"
  | "vanished";

export interface CheckResult {
  outcome: CheckOutcome;
  detail?: string;
  /** Backend bytes read for the check. */
  bytesRead: number;
}

export async function hashStream(
  body: ReadableStream<Uint8Array>,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of body) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  return { sha256: hash.digest("hex"), size };
}

/** A read that failed on damaged stored bytes is a corrupt object; anything else is unreadable. */
function readFailure(err: unknown): "corrupt" | "unreadable" {
  return isStoredDataDamage(err) ? "corrupt" : "unreadable";
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Compares what was read with what the metadata records. */
function judge(info: ObjectInfo, got: { sha256: string; size: number }): CheckResult {
  const bytesRead = got.size;
  if (got.size !== info.meta.size) {
    return {
      outcome: "corrupt",
      detail: `Read ${got.size} bytes where the metadata records ${info.meta.size}`,
      bytesRead,
    };
  }
  if (!info.meta.sha256) {
    return { outcome: "unchecked", detail: "No sha256 recorded", bytesRead };
  }
  if (got.sha256 !== info.meta.sha256) {
    return {
      outcome: "corrupt",
      detail: `sha256 is ${got.sha256}, the metadata records ${info.meta.sha256}`,
      bytesRead,
    };
  }
  return { outcome: "ok", bytesRead };
}

export async function checkPassthrough(
  raw: RawBackend,
  pacer: Pacer,
  bucket: string,
  name: string,
): Promise<CheckResult> {
  let found;
  try {
    found = await raw.getObject(bucket, name);
  } catch (err) {
    return { outcome: readFailure(err), detail: reasonOf(err), bytesRead: 0 };
  }
  if (found === null) return { outcome: "vanished", bytesRead: 0 };
  try {
    return judge(found.info, await hashStream(pacer.paced(found.body)));
  } catch (err) {
    return { outcome: readFailure(err), detail: reasonOf(err), bytesRead: 0 };
  }
}

export interface DeltaCheckResult extends CheckResult {
  /** Backend bytes read for the baseline (0 when the last one was reused). */
  baselineBytes: number;
  /** What the baseline's own check found. */
  baseline: CheckOutcome;
  baselineDetail?: string;
}

interface BaselineFile {
  bucket: string;
  deltaspace: string;
  /** The baseline's metadata sha256 (what deltas record as their referenceSha256). */
  sha256: string;
  result: CheckResult;
  path?: string;
  /** Its `baselineForm` metadata, passed on to the decoder. */
  form?: string;
}

/** Checks baselines and rebuilds deltas; keeps the last baseline file for the next delta. */
export class DeltaChecks {
  #last: BaselineFile | undefined;
  #seq = 0;

  constructor(
    private readonly raw: RawBackend,
    private readonly decode: DeltaDecoder,
    private readonly scratchDir: string,
    private readonly pacer: Pacer,
    private readonly signal?: AbortSignal,
  ) {}

  #scratch(label: string): string {
    return `${this.scratchDir}/${label}-${Date.now()}-${this.#seq++}`;
  }

  /** Hashes the deltaspace's baseline (once per run of consecutive uses). */
  async baseline(bucket: string, deltaspace: string): Promise<BaselineFile> {
    const last = this.#last;
    if (last && last.bucket === bucket && last.deltaspace === deltaspace) {
      return { ...last, result: { ...last.result, bytesRead: 0 } };
    }
    await this.release();
    const file: BaselineFile = await this.#fetch(bucket, deltaspace);
    this.#last = file;
    return file;
  }

  async #fetch(bucket: string, deltaspace: string): Promise<BaselineFile> {
    const name = referenceNameFor(deltaspace);
    const base = { bucket, deltaspace, sha256: "" };
    let found;
    try {
      found = await this.raw.getObject(bucket, name);
    } catch (err) {
      const outcome = isStoredDataDamage(err) ? "corrupt_baseline" : "unreadable";
      return { ...base, result: { outcome, detail: reasonOf(err), bytesRead: 0 } };
    }
    if (found === null) {
      return {
        ...base,
        result: { outcome: "missing_baseline", detail: `${name} is missing`, bytesRead: 0 },
      };
    }
    const path = this.#scratch("baseline");
    const hash = createHash("sha256");
    let size = 0;
    try {
      const out = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
      try {
        for await (const chunk of this.pacer.paced(found.body)) {
          hash.update(chunk);
          size += chunk.byteLength;
          for (let at = 0; at < chunk.byteLength;) at += await out.write(chunk.subarray(at));
        }
      } finally {
        out.close();
      }
    } catch (err) {
      await Deno.remove(path).catch(() => {});
      this.signal?.throwIfAborted();
      return {
        ...base,
        sha256: found.info.meta.sha256,
        result: {
          outcome: isStoredDataDamage(err) ? "corrupt_baseline" : "unreadable",
          detail: reasonOf(err),
          bytesRead: size,
        },
      };
    }
    const result = judge(found.info, { sha256: hash.digest("hex"), size });
    const form = metaString(found.info, "baselineForm");
    const file = { ...base, sha256: found.info.meta.sha256, result, path, form };
    if (result.outcome === "corrupt") {
      file.result = { ...result, outcome: "corrupt_baseline" };
    }
    return file;
  }

  /** Rebuilds the delta stored as `info` (its stored name and metadata) and checks it. */
  async delta(
    bucket: string,
    info: ObjectInfo,
    deltaspace: string,
  ): Promise<DeltaCheckResult> {
    const baseline = await this.baseline(bucket, deltaspace);
    const baselineBytes = baseline.result.bytesRead;
    const about = {
      baselineBytes,
      baseline: baseline.result.outcome,
      baselineDetail: baseline.result.detail,
    };
    const refused = (outcome: CheckOutcome, detail: string): DeltaCheckResult => ({
      outcome,
      detail,
      bytesRead: 0,
      ...about,
    });
    const name = referenceNameFor(deltaspace);
    switch (baseline.result.outcome) {
      case "ok":
      case "unchecked":
        break;
      case "missing_baseline":
        return refused("missing_baseline", `Its baseline ${name} is missing`);
      case "corrupt_baseline":
        return refused("unrebuildable", `Its baseline ${name} fails its sha256`);
      default:
        return refused(
          "unrebuildable",
          `Its baseline ${name} cannot be read: ${baseline.result.detail}`,
        );
    }
    const recorded = metaString(info, "referenceSha256");
    if (recorded !== undefined && recorded !== baseline.sha256) {
      return refused("unrebuildable", `It was encoded against another baseline than ${name}`);
    }
    let found;
    try {
      found = await this.raw.getObject(bucket, info.key);
    } catch (err) {
      return refused("unreadable", reasonOf(err));
    }
    if (found === null) return { outcome: "vanished", bytesRead: 0, ...about };
    const out = this.#scratch("rebuilt");
    let read = 0;
    const counted = this.pacer.paced(found.body).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          read += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    try {
      await Deno.writeFile(out, new Uint8Array(0), { mode: 0o600 });
      try {
        await this.decode(
          baseline.path!,
          counted,
          out,
          info.storedSize,
          this.signal,
          metaString(info, "transform"),
          { codec: metaString(info, "codec"), size: info.meta.size, baselineForm: baseline.form },
        );
      } catch (err) {
        this.signal?.throwIfAborted();
        // A missing codec, a busy pool or a full disk says nothing about the stored bytes.
        if (err instanceof SvcError && err.code !== "InternalError") {
          return { outcome: "unreadable", detail: err.message, bytesRead: read, ...about };
        }
        return {
          outcome: "corrupt",
          detail: `The delta cannot be rebuilt: ${reasonOf(err)}`,
          bytesRead: read,
          ...about,
        };
      }
      const file = await Deno.open(out, { read: true });
      const got = await hashStream(file.readable);
      return { ...judge(found.info, got), bytesRead: read, ...about };
    } finally {
      await Deno.remove(out).catch(() => {});
    }
  }

  /** Deletes the kept baseline file. */
  async release(): Promise<void> {
    const path = this.#last?.path;
    this.#last = undefined;
    if (path) await Deno.remove(path).catch(() => {});
  }
}
