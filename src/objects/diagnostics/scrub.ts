/**
 * The integrity scan ("scrub", `POST /diagnostics/scan/start`): walks each bucket's stored names
 * below the delta layer, one object at a time at a bounded byte rate (pacer.ts), and checks every
 * logical object against the sha256 its metadata records (object-checks.ts), every baseline
 * against its own, and the artifacts against each other. Findings (capped, the first kept):
 *
 * - `corrupt_object`: a passthrough object or a rebuilt delta whose bytes differ from its sha256
 *   (or a delta the codec cannot rebuild);
 * - `corrupt_baseline`: a baseline whose bytes differ from its sha256;
 * - `missing_baseline`: a delta whose baseline is gone;
 * - `unrebuildable`: a delta whose baseline is corrupt, unreadable or another one than it was
 *   encoded against;
 * - `unreadable`: the backend failed to answer for an object (or a bucket's listing);
 * - `orphan_baseline`: a baseline no delta uses; `orphan_marker`: a group marker whose delta is
 *   gone (or in another deltaspace); `stale_delta` / `stale_passthrough`: a key stored both as
 *   `x.delta` and `x`, the older copy named (listings show the newer one).
 *
 * One run at a time. Its state is persisted (scrub-state.ts): a restart resumes a run that was
 * going (`resumes` counts it); `stop` ends it for good. Memory: the findings cap, and per bucket
 * one entry per deltaspace for orphan detection.
 */
import { randomUUID } from "node:crypto";
import { referenceNameFor } from "../../delta/mod.ts";
import type { ListPage, ObjectInfo } from "../../storage/mod.ts";
import {
  checkPassthrough,
  type CheckResult,
  DeltaChecks,
  type DeltaDecoder,
} from "./object-checks.ts";
import type { RawBackend } from "./object-checks.ts";
import { Pacer } from "./pacer.ts";
import {
  type BucketProgress,
  emptyProgress,
  type FindingKind,
  loadScrubState,
  saveScrubState,
  type ScrubState,
} from "./scrub-state.ts";
import { roleOf } from "./stored-names.ts";
import { markerFinding, shadowFinding } from "./artifact-checks.ts";

export interface ScrubSettings {
  /** Backend bytes per second a run may read; 0 = unpaced. */
  bytesPerSec: number;
  /** Findings kept in the status. */
  maxFindings: number;
}

export interface ScrubDeps {
  raw: () => RawBackend;
  decode: () => DeltaDecoder;
  bucketNames(): Promise<string[]>;
  compressed(bucket: string): boolean;
  stateFile: string;
  scratchDir: string;
  defaults: () => ScrubSettings;
  /** Called per logical object checked, per finding, and when a run starts or ends. */
  observer?: {
    object(result: string): void;
    finding(kind: FindingKind): void;
    running(on: boolean): void;
    finished?(state: ScrubState): void;
  };
  now?: () => number;
  /** Listing page size (small: a page is re-listed after a restart). */
  pageSize?: number;
  persistEveryMs?: number;
}

const FINDING_OF: Partial<Record<CheckResult["outcome"], FindingKind>> = {
  corrupt: "corrupt_object",
  corrupt_baseline: "corrupt_baseline",
  missing_baseline: "missing_baseline",
  unrebuildable: "unrebuildable",
  unreadable: "unreadable",
};

export class Scrubber {
  #state: ScrubState | null = null;
  #loop: Promise<void> | null = null;
  #abort: AbortController | null = null;
  #persistedAt = 0;
  /** The deltaspaces deltas of the bucket being scanned use (copied into the state on save). */
  #referenced = new Set<string>();
  readonly #now: () => number;

  constructor(private readonly deps: ScrubDeps) {
    this.#now = deps.now ?? Date.now;
  }

  /** Loads the persisted state; resumes a run a restart interrupted. */
  async init(): Promise<void> {
    const state = await loadScrubState(this.deps.stateFile);
    if (state === null) return;
    this.#state = state;
    this.#referenced = new Set(state.open.referenced);
    if (state.state === "running") {
      state.resumes++;
      this.#launch();
    }
  }

  get running(): boolean {
    return this.#loop !== null;
  }

  state(): ScrubState | null {
    return this.#state;
  }

  /** Starts a run over `bucket` (or every bucket); joins a run already going. */
  async start(options: { bucket?: string; by?: string; bytesPerSec?: number }): Promise<
    { started: boolean; state: ScrubState }
  > {
    if (this.#loop !== null && this.#state) return { started: false, state: this.#state };
    const defaults = this.deps.defaults();
    const buckets = options.bucket !== undefined
      ? [options.bucket]
      : [...new Set(await this.deps.bucketNames())].sort();
    const now = this.#now();
    this.#state = {
      version: 1,
      run_id: randomUUID(),
      state: "running",
      started_at: now,
      updated_at: now,
      started_by: options.by,
      bucket_filter: options.bucket ?? null,
      buckets,
      cursor: buckets.length > 0 ? { bucket: buckets[0], after: null } : null,
      resumes: 0,
      bytes_per_sec: options.bytesPerSec ?? defaults.bytesPerSec,
      max_findings: defaults.maxFindings,
      per_bucket: Object.fromEntries(buckets.map((b) => [b, emptyProgress()])),
      findings: [],
      findings_total: 0,
      findings_dropped: 0,
      open: { referenced: [], baselines: {}, since: now },
    };
    this.#referenced = new Set();
    await this.#persist(true);
    this.#launch();
    return { started: true, state: this.#state };
  }

  /** Ends the running run for good (a restart does not resume it). */
  async stop(): Promise<{ stopped: boolean; state: ScrubState | null }> {
    if (this.#loop === null || this.#state === null) return { stopped: false, state: this.#state };
    this.#state.state = "stopped";
    await this.#halt();
    this.#state.finished_at = this.#now();
    await this.#persist(true);
    return { stopped: true, state: this.#state };
  }

  /** Shutdown: interrupts a run but keeps it `running` on disk, so the next start resumes it. */
  async close(): Promise<void> {
    await this.#halt();
    if (this.#state?.state === "running") await this.#persist(true);
  }

  async #halt(): Promise<void> {
    this.#abort?.abort(new Error("Scrub stopped"));
    await this.#loop?.catch(() => {});
  }

  #launch(): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.deps.observer?.running(true);
    this.#loop = this.#run(abort.signal)
      .catch(async (err) => {
        const state = this.#state!;
        if (abort.signal.aborted) return;
        state.state = "failed";
        state.error = err instanceof Error ? err.message : String(err);
        state.finished_at = this.#now();
        await this.#persist(true).catch(() => {});
      })
      .finally(() => {
        this.#loop = null;
        this.#abort = null;
        this.deps.observer?.running(false);
        if (this.#state && this.#state.state !== "running") {
          this.deps.observer?.finished?.(this.#state);
        }
      });
  }

  async #persist(force = false): Promise<void> {
    const state = this.#state;
    if (state === null) return;
    const now = this.#now();
    state.updated_at = now;
    if (!force && now - this.#persistedAt < (this.deps.persistEveryMs ?? 1000)) return;
    this.#persistedAt = now;
    if (state.cursor !== null) state.open.referenced = [...this.#referenced];
    await saveScrubState(this.deps.stateFile, state);
  }

  async #run(signal: AbortSignal): Promise<void> {
    const state = this.#state!;
    const pacer = new Pacer(() => state.bytes_per_sec, signal);
    const checks = new DeltaChecks(
      this.deps.raw(),
      this.deps.decode(),
      this.deps.scratchDir,
      pacer,
      signal,
    );
    try {
      while (state.cursor !== null) {
        const { bucket } = state.cursor;
        await this.#scanBucket(bucket, checks, pacer, signal);
        await checks.release();
        const next = state.buckets[state.buckets.indexOf(bucket) + 1];
        state.cursor = next === undefined ? null : { bucket: next, after: null };
        state.open = { referenced: [], baselines: {}, since: this.#now() };
        this.#referenced = new Set();
        await this.#persist(true);
      }
      signal.throwIfAborted(); // a stop that came with the last object wins
      state.state = "finished";
      state.finished_at = this.#now();
      await this.#persist(true);
    } finally {
      await checks.release();
    }
  }

  async #scanBucket(
    bucket: string,
    checks: DeltaChecks,
    pacer: Pacer,
    signal: AbortSignal,
  ): Promise<void> {
    const state = this.#state!;
    const progress = state.per_bucket[bucket] ??= emptyProgress();
    progress.state = "scanning";
    progress.started_at ??= this.#now();
    const compressed = this.deps.compressed(bucket);
    const referenced = this.#referenced = new Set(state.open.referenced);
    const raw = this.deps.raw();
    try {
      let startAfter = state.cursor!.after ?? undefined;
      for (;;) {
        signal.throwIfAborted();
        const page: ListPage = await raw.listObjects(bucket, {
          prefix: "",
          startAfter,
          maxKeys: this.deps.pageSize ?? 100,
        });
        for (const info of page.objects) {
          // Counters and cursor move together: an interrupted check counts nothing (it throws).
          await this.#checkOne(bucket, info, compressed, progress, referenced, checks, pacer);
          state.cursor = { bucket, after: info.key };
          await this.#persist();
        }
        if (!page.isTruncated || page.nextStartAfter === undefined) break;
        startAfter = page.nextStartAfter;
      }
      await this.#orphanBaselines(bucket, referenced);
      progress.state = "done";
    } catch (err) {
      if (signal.aborted) throw err;
      progress.state = "failed";
      progress.error = err instanceof Error ? err.message : String(err);
      this.#find(bucket, "", "", "unreadable", `The bucket cannot be listed: ${progress.error}`);
    }
    progress.finished_at = this.#now();
  }

  async #checkOne(
    bucket: string,
    info: ObjectInfo,
    compressed: boolean,
    progress: BucketProgress,
    referenced: Set<string>,
    checks: DeltaChecks,
    pacer: Pacer,
  ): Promise<void> {
    const role = roleOf(info, compressed);
    if (role === null) return;
    const raw = this.deps.raw();
    const signal = this.#abort!.signal;
    switch (role.role) {
      case "passthrough": {
        const result = await checkPassthrough(raw, pacer, bucket, info.key);
        signal.throwIfAborted(); // a read cut short by the stop is no finding
        this.#count(bucket, role.key, info.key, result, progress);
        return;
      }
      case "delta": {
        referenced.add(role.deltaspace);
        const shadow = await shadowFinding(raw, bucket, role.key, info);
        if (shadow) this.#find(bucket, shadow.key, shadow.storedName, shadow.kind, shadow.detail);
        const result = await checks.delta(bucket, info, role.deltaspace);
        signal.throwIfAborted();
        progress.bytes_read += result.baselineBytes;
        if (result.baseline === "corrupt_baseline") {
          const name = referenceNameFor(role.deltaspace);
          this.#find(bucket, name, name, "corrupt_baseline", result.baselineDetail ?? "");
        }
        this.#count(bucket, role.key, info.key, result, progress);
        return;
      }
      case "baseline": {
        this.#state!.open.baselines[role.deltaspace] = info.key;
        const file = await checks.baseline(bucket, role.deltaspace);
        signal.throwIfAborted();
        progress.baselines_checked++;
        progress.bytes_read += file.result.bytesRead;
        const kind = FINDING_OF[file.result.outcome];
        if (kind !== undefined && file.result.outcome !== "missing_baseline") {
          this.#find(bucket, info.key, info.key, kind, file.result.detail ?? "");
        }
        return;
      }
      case "marker": {
        progress.markers_checked++;
        const found = await markerFinding(raw, bucket, info, role.deltaspace);
        signal.throwIfAborted();
        if (found) this.#find(bucket, found.key, found.storedName, found.kind, found.detail);
        return;
      }
    }
  }

  async #orphanBaselines(bucket: string, referenced: Set<string>) {
    const state = this.#state!;
    const raw = this.deps.raw();
    for (const [deltaspace, name] of Object.entries(state.open.baselines)) {
      if (referenced.has(deltaspace)) continue;
      // A baseline written after this bucket's walk began may belong to a delta listed earlier.
      const again = await raw.headObject(bucket, name).catch(() => null);
      if (again === null || again.meta.lastModified >= state.open.since) continue;
      this.#find(bucket, name, name, "orphan_baseline", "No delta uses this baseline");
    }
  }

  #count(
    bucket: string,
    key: string,
    storedName: string,
    result: CheckResult,
    progress: BucketProgress,
  ): void {
    if (result.outcome === "vanished") return; // deleted while the scan went: nothing to check
    progress.objects_checked++;
    progress.bytes_read += result.bytesRead;
    if (result.outcome === "ok") progress.objects_ok++;
    else if (result.outcome === "unchecked") progress.objects_unchecked++;
    else progress.objects_failed++;
    this.deps.observer?.object(result.outcome);
    const kind = FINDING_OF[result.outcome];
    if (kind !== undefined) this.#find(bucket, key, storedName, kind, result.detail ?? "");
  }

  #find(bucket: string, key: string, storedName: string, kind: FindingKind, detail: string) {
    const state = this.#state!;
    const duplicate = state.findings.some((f) =>
      f.bucket === bucket && f.stored_name === storedName && f.kind === kind
    );
    if (duplicate) return;
    state.findings_total++;
    const progress = state.per_bucket[bucket];
    if (progress) progress.findings++;
    this.deps.observer?.finding(kind);
    if (state.findings.length >= state.max_findings) {
      state.findings_dropped++;
      return;
    }
    state.findings.push({
      bucket,
      key,
      stored_name: storedName,
      kind,
      detail,
      found_at: this.#now(),
    });
  }
}
