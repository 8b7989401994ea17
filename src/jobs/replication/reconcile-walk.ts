/**
 * The full reconcile of one rule: a directory-scoped walk of the source and the destination
 * with delimiter ("/") listings, merged in key order. Per directory, entries are taken in
 * chunks of `batch_size`: the chunk's objects are planned and copied `transfers` at a time, then
 * its subdirectories are walked in order, the next `dir_concurrency` of them already listing
 * (prefetch). Memory holds a page per side of each open directory and the prefetched pages,
 * never the key set: a million keys cost what a thousand do.
 *
 * Order and the resume cursor: a delimiter listing puts a subdirectory exactly where its keys
 * sort, so this depth-first walk visits keys in global key order. The cursor is the last source
 * key (or completed subdirectory prefix, ending in "/") such that everything up to it is done;
 * it is saved after every `batch_size` objects (or second), so a kill redoes at most one batch.
 * Resuming lists each directory on the cursor's path after it (a listing's `startAfter` equal to
 * a common prefix skips that whole subtree).
 *
 * HEADs: none when the listings carry what the policy needs (filesystem listings carry size,
 * time and SHA-256); for a key on both sides an S3 listing lacks SHA-256, so `content-diff`
 * HEADs that side. Keys on one side only are never HEADed, except the source HEAD that confirms
 * a delete.
 */
import { compareUtf8, mapConcurrent, Semaphore, SvcError } from "../../lib/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import { listingSuffices, needsDetail } from "./replication-planner.ts";
import type { Replicator } from "./replicator.ts";
import { type Entry, type ReaderDeps, SideReader } from "./side-reader.ts";

export interface WalkOptions {
  env: RuleEnv;
  replicator: Replicator;
  batchSize: number;
  transfers: number;
  dirConcurrency: number;
  signal: AbortSignal;
  /** Resume after this source key or completed directory prefix. */
  resumeAfter?: string;
  /** Persists the cursor (everything up to `after` is done). */
  checkpoint(after: string): Promise<void>;
  now?: () => number;
}

interface Item {
  rel: string;
  source: Entry | null;
  destination: Entry | null;
}

interface Readers {
  source: SideReader;
  destination: SideReader;
}

/** Objects (or seconds) between two cursor saves. */
const SAVE_EVERY_MS = 1000;

export class ReconcileWalk {
  readonly #o: WalkOptions;
  readonly #source: ReaderDeps;
  readonly #destination: ReaderDeps;
  #sinceSave = 0;
  #lastSave: number;
  readonly #now: () => number;

  constructor(options: WalkOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#lastSave = this.#now();
    const limiter = new Semaphore(options.dirConcurrency);
    const metrics = options.env.metrics.replication;
    const deps = (): ReaderDeps => ({
      list: (bucket, listOptions) => options.env.objects().listObjects(bucket, listOptions),
      limiter,
      pageSize: options.batchSize,
      signal: options.signal,
      onList: () => metrics.listCalls.inc(),
    });
    this.#source = deps();
    this.#destination = deps();
  }

  get #scope() {
    return this.#o.replicator.scope;
  }

  async run(): Promise<void> {
    await this.#walk(this.#scope.sourcePrefix, this.#o.resumeAfter);
  }

  #readers(dir: string, startRel: string | undefined, onSource = true, onDest = true): Readers {
    const scope = this.#scope;
    return {
      source: new SideReader(this.#source, scope.sourceBucket, dir, startRel, !onSource),
      destination: new SideReader(
        this.#destination,
        scope.destinationBucket,
        scope.toDestination(dir),
        startRel,
        !onDest,
      ),
    };
  }

  /** Walks directory `dir` (a source prefix), after `after` when resuming inside it. */
  async #walk(dir: string, after?: string, given?: Readers): Promise<void> {
    let startRel: string | undefined;
    if (after !== undefined && after.startsWith(dir) && after.length > dir.length) {
      const rest = after.slice(dir.length);
      const slash = rest.indexOf("/");
      if (slash >= 0 && slash < rest.length - 1) {
        // The cursor lies inside a subdirectory: finish it first, then list after it.
        await this.#walk(dir + rest.slice(0, slash + 1), after);
        startRel = rest.slice(0, slash + 1);
      } else {
        startRel = rest;
      }
    }
    const readers = given ?? this.#readers(dir, startRel);
    for (;;) {
      this.#checkAborted();
      const chunk = await this.#chunk(readers);
      if (chunk.length === 0) break;
      const objects = chunk.filter((item) => !isDirectory(item));
      const dirs = chunk.filter((item) =>
        isDirectory(item) && !this.#scope.skipsTree(dir + item.rel) &&
        (item.source !== null || this.#o.replicator.planOptions.replicateDeletes)
      );
      const work = objects.filter((item) => !this.#settled(dir, item));
      await mapConcurrent(work, this.#o.transfers, (item) => this.#object(dir, item));
      await this.#children(dir, dirs);
      await this.#progress(dir + chunk[chunk.length - 1].rel, objects.length);
    }
    this.#o.env.metrics.replication.dirsCompleted.inc();
  }

  /** Up to `batch_size` entries of both sides, merged in key order. */
  async #chunk(readers: Readers): Promise<Item[]> {
    const items: Item[] = [];
    while (items.length < this.#o.batchSize) {
      let s = readers.source.peekHeld();
      let d = readers.destination.peekHeld();
      if (s === undefined || d === undefined) {
        [s, d] = await Promise.all([readers.source.peek(), readers.destination.peek()]);
      }
      if (s === null && d === null) break;
      const order = s === null ? 1 : d === null ? -1 : compareUtf8(s.rel, d.rel);
      const rel = order <= 0 ? s!.rel : d!.rel;
      items.push({
        rel,
        source: order <= 0 ? readers.source.shift() : null,
        destination: order >= 0 ? readers.destination.shift() : null,
      });
    }
    return items;
  }

  /** Walks subdirectories in order, the next `dir_concurrency` of them listing ahead. */
  async #children(dir: string, dirs: Item[]): Promise<void> {
    const ahead: (Readers | undefined)[] = new Array(dirs.length);
    const open = (i: number) => {
      ahead[i] ??= this.#readers(
        dir + dirs[i].rel,
        undefined,
        dirs[i].source !== null,
        dirs[i].destination !== null,
      );
      return ahead[i]!;
    };
    for (let i = 0; i < dirs.length; i++) {
      this.#checkAborted();
      for (let j = i; j < Math.min(dirs.length, i + this.#o.dirConcurrency); j++) {
        const readers = open(j);
        readers.source.start();
        readers.destination.start();
      }
      const readers = open(i);
      ahead[i] = undefined;
      await this.#walk(dir + dirs[i].rel, undefined, readers);
    }
  }

  /** Whether the key needs nothing: never replicated, or a skip the listings already decide. */
  #settled(dir: string, item: Item): boolean {
    const key = dir + item.rel;
    const { replicator } = this.#o;
    if (this.#scope.skipReason(key) !== null) return true;
    if (item.source === null && !replicator.planOptions.replicateDeletes) return true;
    const source = item.source?.info ?? null;
    const destination = item.destination?.info ?? null;
    const conflict = replicator.planOptions.conflict;
    if (
      source !== null && destination !== null && needsDetail(conflict) &&
      !(listingSuffices(conflict, source.meta) && listingSuffices(conflict, destination.meta))
    ) return false;
    return replicator.skipNow(source, destination?.meta ?? null);
  }

  async #object(dir: string, item: Item): Promise<void> {
    this.#checkAborted();
    const key = dir + item.rel;
    const { replicator } = this.#o;
    if (this.#scope.skipReason(key) !== null) return;
    // A destination-only key matters only when deletes are replicated.
    if (item.source === null && !replicator.planOptions.replicateDeletes) return;
    let source = item.source?.info ?? null;
    let destination = item.destination?.info ?? null;
    try {
      const conflict = replicator.planOptions.conflict;
      if (source !== null && destination !== null && needsDetail(conflict)) {
        if (!listingSuffices(conflict, source.meta)) {
          source = await this.#head(this.#scope.sourceBucket, key);
        }
        if (source !== null && !listingSuffices(conflict, destination.meta)) {
          destination = await this.#head(
            this.#scope.destinationBucket,
            this.#scope.toDestination(key),
          );
        }
      }
      await replicator.apply(key, source, destination?.meta ?? null, this.#o.signal);
    } catch (err) {
      if (this.#o.signal.aborted) throw this.#o.signal.reason;
      replicator.recorder.counters.objects_scanned++;
      replicator.recorder.fail(this.#scope.sourceBucket, key, err);
    }
  }

  /** The object's full metadata, or null when it is gone (any other error throws). */
  async #head(bucket: string, key: string): Promise<ObjectInfo | null> {
    this.#o.env.metrics.replication.headCalls.inc();
    try {
      return await this.#o.env.objects().head(bucket, key);
    } catch (err) {
      if (err instanceof SvcError && err.code === "NoSuchKey") return null;
      throw err;
    }
  }

  async #progress(after: string, objects: number): Promise<void> {
    this.#sinceSave += Math.max(1, objects);
    const now = this.#now();
    if (this.#sinceSave < this.#o.batchSize && now - this.#lastSave < SAVE_EVERY_MS) return;
    this.#sinceSave = 0;
    this.#lastSave = now;
    await this.#o.checkpoint(after);
  }

  #checkAborted(): void {
    if (this.#o.signal.aborted) throw this.#o.signal.reason;
  }
}

function isDirectory(item: Item): boolean {
  return (item.source !== null && item.source.info === null) ||
    (item.destination !== null && item.destination.info === null);
}
