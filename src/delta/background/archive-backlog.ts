/**
 * The archives waiting for their background conversion (archive-convert.ts), kept on local disk so
 * a restart resumes them: one small JSON file per write (`<sha256 of bucket and
 * key>.<writtenAt>.json`, written to a temp file, fsynced and renamed); a key's newer write
 * replaces its older one. One conversion
 * runs at a time, oldest first, so the backlog takes one codec slot and S3 requests keep the
 * others; a conversion that could not run (no codec slot, a backend error) is tried again after
 * a pause that doubles up to RETRY_MAX_MS.
 *
 * An instance converts the writes it took. An entry lost with its instance's disk leaves its
 * object stored as it came, readable, shown `archive_pending` in the delta-efficiency report.
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import { KeyLock, privateDir, syncDirectory, writeAll } from "../../lib/mod.ts";
import type { ConvertOutcome, PendingArchive } from "./archive-convert.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import { getLogger } from "../../observability/mod.ts";

const log = getLogger("svc::delta");

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

interface Queued {
  pending: PendingArchive;
  /** Its file in the backlog directory. */
  file: string;
  attempts: number;
  /** Not tried again before this time (ms). */
  notBefore: number;
}

/** What the backlog reports (metrics, usage counters) and asks (the maintenance gate). */
export interface BacklogHooks {
  /** One conversion's outcome. */
  outcome(outcome: ConvertOutcome): void;
  /** A write of `bucket` stored as it came (`source`) is now stored as `stored`. */
  converted?(bucket: string, stored: ObjectInfo, source: ObjectInfo): void;
  /**
   * Asked before each conversion: null while the bucket takes no writes (a maintenance job holds
   * it: tried again later), else the function that ends the conversion's write (the job's drain
   * waits for it).
   */
  admit?(bucket: string): (() => void) | null;
}

export class ArchiveBacklog {
  readonly #dir: string;
  readonly #convert: (pending: PendingArchive) => Promise<ConvertOutcome>;
  readonly #hooks: BacklogHooks | undefined;
  readonly #queued = new Map<string, Queued>();
  readonly #keys = new KeyLock();
  #wake: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #stopped = false;

  private constructor(
    dir: string,
    convert: (pending: PendingArchive) => Promise<ConvertOutcome>,
    hooks?: BacklogHooks,
  ) {
    this.#dir = dir;
    this.#convert = convert;
    this.#hooks = hooks;
  }

  /** Opens (or creates) the backlog in `dir` with the entries a previous run left. */
  static async open(
    dir: string,
    convert: (pending: PendingArchive) => Promise<ConvertOutcome>,
    hooks?: BacklogHooks,
  ): Promise<ArchiveBacklog> {
    await privateDir(dir);
    const backlog = new ArchiveBacklog(dir, convert, hooks);
    const found: { id: string; file: string; pending: PendingArchive; mtime: number }[] = [];
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (!entry.isFile) continue;
      if (!entry.name.endsWith(".json")) { // a temp file of an interrupted write
        await Deno.remove(path).catch(() => {});
        continue;
      }
      try {
        const pending = parsePending(await Deno.readTextFile(path));
        const mtime = (await Deno.stat(path)).mtime?.getTime() ?? 0;
        found.push({ id: entry.name.split(".")[0], file: entry.name, pending, mtime });
      } catch (err) {
        log.warn("Dropping an unreadable archive backlog entry", { path, error: String(err) });
        await Deno.remove(path).catch(() => {});
      }
    }
    found.sort((a, b) =>
      a.mtime - b.mtime || Number(a.pending.writtenAt) - Number(b.pending.writtenAt)
    );
    for (const { id, file, pending } of found) {
      const older = backlog.#queued.get(id);
      // A crash between a newer entry's write and the older one's removal.
      if (older) await Deno.remove(join(dir, older.file)).catch(() => {});
      backlog.#queued.delete(id);
      backlog.#queued.set(id, { pending, file, attempts: 0, notBefore: 0 });
    }
    return backlog;
  }

  /** How many writes wait for their conversion. */
  get size(): number {
    return this.#queued.size;
  }

  /** Queues the write `pending` (durably: on disk before this returns), replacing the key's. */
  async add(pending: PendingArchive): Promise<void> {
    const id = idOf(pending.bucket, pending.key);
    const file = `${id}.${pending.writtenAt.replace(/[^0-9]/g, "")}.json`;
    const path = join(this.#dir, file);
    const temp = join(this.#dir, `${id}.${crypto.randomUUID()}.tmp`);
    try {
      using file = await Deno.open(temp, { write: true, createNew: true, mode: 0o600 });
      await writeAll(file, new TextEncoder().encode(JSON.stringify(pending)));
      await file.sync();
      await Deno.rename(temp, path);
      await syncDirectory(this.#dir); // the new name too is on disk before the PUT answers
    } catch (err) {
      await Deno.remove(temp).catch(() => {});
      throw err;
    }
    const older = this.#queued.get(id);
    this.#queued.delete(id); // to the end of the line
    this.#queued.set(id, { pending, file, attempts: 0, notBefore: 0 });
    if (older && older.file !== file) await this.#removeFile(older);
    this.#wake?.();
  }

  /**
   * Runs `work` while no conversion of `bucket/key` runs (a delete of the key: a conversion never
   * lands after a delete of this instance returned).
   */
  guard<T>(bucket: string, key: string, work: () => Promise<T>): Promise<T> {
    const id = idOf(bucket, key);
    return this.#queued.has(id) ? this.#keys.run(id, work) : work();
  }

  /** Starts converting (once). */
  start(): void {
    this.#loop ??= this.#run().catch((err) => {
      log.error("The archive backlog stopped", { error: String(err) });
    });
  }

  /** Stops after the conversion in progress, if any; what is left is resumed at the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const now = Date.now();
      let next: [string, Queued] | undefined;
      let soonest = Infinity; // a loop, not Math.min(...): the backlog may hold many entries
      for (const entry of this.#queued) {
        if (entry[1].notBefore <= now) {
          next = entry;
          break;
        }
        soonest = Math.min(soonest, entry[1].notBefore);
      }
      if (!next) {
        await this.#sleep(Number.isFinite(soonest) ? soonest - now : undefined);
        continue;
      }
      const [id, queued] = next;
      const outcome = await this.#keys.run(id, () => this.#convert(queued.pending));
      this.#hooks?.outcome(outcome);
      if (this.#queued.get(id) !== queued) continue; // a newer write of the key was queued
      if (outcome === "retry") {
        queued.attempts++;
        queued.notBefore = Date.now() +
          Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (queued.attempts - 1));
        continue;
      }
      this.#queued.delete(id);
      await this.#removeFile(queued);
    }
  }

  async #removeFile(queued: Queued): Promise<void> {
    await Deno.remove(join(this.#dir, queued.file)).catch((err) => {
      if (err instanceof Deno.errors.NotFound) return;
      const { bucket, key } = queued.pending;
      log.warn("Cannot remove an archive backlog entry", { bucket, key, error: String(err) });
    });
  }

  /** Waits for `ms` (forever when undefined), an add or stop. */
  #sleep(ms: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }
}

function idOf(bucket: string, key: string): string {
  return createHash("sha256").update(`${bucket}\n${key}`).digest("hex");
}

function parsePending(text: string): PendingArchive {
  const raw = JSON.parse(text) as Record<string, unknown>;
  const fields = ["bucket", "key", "sha256", "writtenAt"] as const;
  for (const field of fields) {
    if (typeof raw[field] !== "string") throw new Error(`Field "${field}" is not a string`);
  }
  return {
    bucket: raw.bucket,
    key: raw.key,
    sha256: raw.sha256,
    writtenAt: raw.writtenAt,
  } as PendingArchive;
}
