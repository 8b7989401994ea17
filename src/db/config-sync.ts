/**
 * Config sync (`advanced.config_sync_bucket`, SPEC.md): instances behind one S3 store share their
 * users, groups and permissions. After every IAM change an instance uploads the IAM snapshot of
 * its config database (iam-snapshot.ts: encrypted with the key every instance derives from the
 * shared bootstrap password hash) as `.svc/config.db` in the bucket; every instance polls the
 * object's ETag (every `config_sync_poll_secs`, 300 by default) and adopts a changed one.
 *
 * Writes are conditional on the ETag this instance last wrote or adopted (`If-Match`, or
 * `If-None-Match: *` for the first), so two instances changing IAM at once cannot both win
 * silently: the one that loses gets 412, logs and audits `config_sync_conflict`, and adopts the
 * other's state — its own change is then gone and must be made again. Session revocations travel
 * too (logout, password change: admin/session/sessions.ts) and are merged, not replaced, so one
 * lost in such a race is published again right after. Jobs, the event outbox and usage counters
 * stay node-local. `syncNow` (`POST /_/api/admin/config/sync-now`) runs one poll at once.
 */
import { type AuditFn, type ConfigSyncOutcome, getLogger } from "../observability/mod.ts";
import { BackendError, type S3Client } from "../storage/mod.ts";
import type { ConfigDb } from "./config-db.ts";
import { removeDatabase } from "./db-files.ts";
import { adoptIamSnapshot, writeIamSnapshot } from "./iam-snapshot.ts";

const log = getLogger("svc::config-sync");

/** The object other instances poll. */
export const SYNC_KEY = ".svc/config.db";
/** What one poll did. */
export type SyncOutcome = "adopted" | "published" | "unchanged";

/** `meta` row: the ETag of the object this instance last wrote or adopted. */
const ETAG_META = "config_sync_etag";

export interface ConfigSyncDeps {
  db: ConfigDb;
  client: S3Client;
  bucket: string;
  pollMs: number;
  /** Where snapshots are written and downloads land (the state directory). */
  workDir: string;
  /** Called after a remote snapshot was adopted (rebuild the IAM index). */
  onAdopted: () => Promise<unknown>;
  audit: AuditFn;
  /** Counts each step's outcome (svc_config_sync_total). */
  count: (outcome: ConfigSyncOutcome) => void;
  /** The running bootstrap key id: a copy giving it to a user is not adopted (iam/model.ts). */
  bootstrapKeyId?: () => string | undefined;
}

export class ConfigSync {
  readonly #deps: ConfigSyncDeps;
  #etag: string | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** One sync step at a time (push or pull), in order. */
  #chain: Promise<void> = Promise.resolve();
  #pushQueued = false;
  #stopped = false;

  constructor(deps: ConfigSyncDeps) {
    this.#deps = deps;
  }

  /** First sync (adopt the bucket's state, or publish ours when it has none), then polling. */
  async start(): Promise<void> {
    const rows = await this.#deps.db.execute({
      sql: "SELECT value FROM meta WHERE key = ?",
      args: [ETAG_META],
    });
    this.#etag = rows.rows.length > 0 ? String(rows.rows[0].value) : null;
    await this.#step(async () => void await this.#poll(true));
    this.#timer = setInterval(() => {
      void this.#step(async () => void await this.#poll(false));
    }, this.#deps.pollMs);
  }

  /** The bucket synced with. */
  get bucket(): string {
    return this.#deps.bucket;
  }

  /**
   * One poll now, after the steps already queued: adopts the bucket's state when it changed
   * (`adopted`), publishes this instance's when the bucket has none (`published`), else
   * `unchanged`. Throws what the step threw (the bucket unreachable, a snapshot that does not
   * open with this instance's key).
   */
  syncNow(): Promise<SyncOutcome> {
    let outcome: SyncOutcome = "unchanged";
    let failure: unknown;
    const run = this.#step(async () => {
      try {
        outcome = await this.#poll(true);
      } catch (err) {
        failure = err;
        throw err;
      }
    });
    return run.then(() => {
      if (failure !== undefined) throw failure;
      return outcome;
    });
  }

  /** Resolves once every step queued so far (publishes, polls) has run; never rejects. */
  settled(): Promise<void> {
    return this.#chain;
  }

  /** IAM changed here: publish it (coalesced with other changes while a step runs). */
  changed(): Promise<void> {
    if (this.#pushQueued) return this.#chain;
    this.#pushQueued = true;
    return this.#step(async () => {
      this.#pushQueued = false;
      await this.#push();
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#chain;
  }

  #step(work: () => Promise<void>): Promise<void> {
    this.#chain = this.#chain.then(async () => {
      if (this.#stopped) return;
      try {
        await work();
      } catch (err) {
        this.#deps.count("failed");
        log.error("config sync failed; retried at the next change or poll", {
          bucket: this.#deps.bucket,
          error: (err as Error).message,
        });
      }
    });
    return this.#chain;
  }

  async #remoteEtag(): Promise<string | null> {
    try {
      const head = await this.#deps.client.send({
        method: "HEAD",
        bucket: this.#deps.bucket,
        key: SYNC_KEY,
        idempotent: true,
      });
      return head.headers.get("etag");
    } catch (err) {
      // Absent is 404 on the object, never a missing bucket or an outage.
      if (err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket") {
        return null;
      }
      throw err;
    }
  }

  async #poll(first: boolean): Promise<SyncOutcome> {
    const remote = await this.#remoteEtag();
    if (remote === null) {
      if (!first) return "unchanged";
      await this.#push();
      return "published";
    }
    if (remote === this.#etag) return "unchanged";
    await this.#pull();
    return "adopted";
  }

  async #push(): Promise<void> {
    const file = `${this.#deps.workDir}/config-sync.upload.db`;
    try {
      await writeIamSnapshot(this.#deps.db, file);
      const { size } = await Deno.stat(file);
      const response = await this.#deps.client.send({
        method: "PUT",
        bucket: this.#deps.bucket,
        key: SYNC_KEY,
        headers: this.#etag === null ? { "if-none-match": "*" } : { "if-match": this.#etag },
        body: { path: file, start: 0, length: size },
        idempotent: false,
      });
      await this.#remember(response.headers.get("etag"));
      this.#deps.count("published");
      log.info("IAM published to the config sync bucket", { bucket: this.#deps.bucket });
    } catch (err) {
      if (!(err instanceof BackendError && (err.status === 412 || err.status === 409))) throw err;
      log.warn(
        "another instance changed IAM at the same time: its state is adopted and the change " +
          "made here is overwritten (make it again)",
        { bucket: this.#deps.bucket },
      );
      this.#deps.audit("config_sync_conflict", { bucket: this.#deps.bucket }, "warn");
      this.#deps.count("conflict");
      await this.#pull();
    } finally {
      await removeDatabase(file).catch(() => {});
    }
  }

  async #pull(): Promise<void> {
    const file = `${this.#deps.workDir}/config-sync.download.db`;
    try {
      const response = await this.#deps.client.send({
        method: "GET",
        bucket: this.#deps.bucket,
        key: SYNC_KEY,
        idempotent: true,
        stream: true,
      });
      const out = await Deno.open(file, { write: true, create: true, truncate: true, mode: 0o600 });
      await response.body!.pipeTo(out.writable);
      const { users, revocationsAhead } = await adoptIamSnapshot(
        this.#deps.db,
        file,
        this.#deps.bootstrapKeyId?.(),
      );
      await this.#remember(response.headers.get("etag"));
      await this.#deps.onAdopted();
      log.info("IAM adopted from the config sync bucket", { bucket: this.#deps.bucket, users });
      this.#deps.audit("config_sync_adopted", { bucket: this.#deps.bucket, users });
      this.#deps.count("adopted");
      // Sessions ended here that the adopted state lacks (a push lost a race): publish them.
      if (revocationsAhead) void this.changed();
    } finally {
      await removeDatabase(file).catch(() => {});
    }
  }

  async #remember(etag: string | null): Promise<void> {
    this.#etag = etag;
    if (etag === null) return;
    await this.#deps.db.execute({
      sql: "INSERT INTO meta (key, value) VALUES (?, ?) " +
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      args: [ETAG_META, etag],
    });
  }
}
