/**
 * The maintenance write gate of a fleet (`advanced.config_sync_bucket` set): a job's gate holds
 * its bucket on every instance, not only on the one running it. Documents: fleet-gate-docs.ts.
 *
 * - **Claim.** Creating (or resuming) a job creates `_svc/gates/<bucket>.json` with
 *   `If-None-Match: *`: of two jobs on one bucket anywhere in the fleet one gets it, the other is
 *   refused (409).
 * - **Watch.** Every instance lists the gates about every second (`refreshMs`, and once before
 *   its listener opens): a gate another instance holds is engaged in the local `BucketWriteGate`
 *   (writes answer 503 SlowDown) and, once the local writes counted before it have ended, acked
 *   (`<bucket>/<instance>.ack`). A gate gone from the listing is lifted locally.
 * - **Drain handshake.** The job reads nothing before its own writes drained and every live
 *   instance acked. Live: its presence document (`_svc/instances/<id>.json`, rewritten every
 *   `presenceMs`) is at most `liveMs` old. An instance writes its presence before its first
 *   listing, hence before it serves a write: one that serves writes is live or was seen gone.
 * - **Heartbeat.** The holder rewrites the gate every `heartbeatMs` with the job's row (any
 *   instance's `GET /jobs` shows it) and reads the cancel another instance asked for in it.
 * - **Flip.** A migration's routing flip is applied locally, recorded durably (fleet-routes.ts),
 *   then written into the gate; every live instance adopts it and acks it before the gate lifts.
 * - **Expiry.** A gate whose heartbeat is older than `expireMs` (the holder died) is lifted by
 *   whichever instance sees it first; one carrying a flip is lifted only once every live
 *   instance adopted the flip. The restarted holder claims anew; a migration that had started
 *   copying then fails and unwinds (writes reached the source meanwhile), a re-encrypt goes on.
 */
import { getLogger } from "../../observability/mod.ts";
import type { JobRecord } from "../job-model.ts";
import {
  defaultSleep,
  type FleetGateOptions,
  type GateDocument,
  GATES_PREFIX,
  type StoredGate,
} from "./fleet-gate-docs.ts";
import type { FleetJobHooks, MaintenanceFleet, MaintenanceWriteGate } from "./maintenance-deps.ts";
import { messageOf } from "./job-steps.ts";
import { FleetRemoteJobs } from "./fleet-remote-jobs.ts";
import { FleetPresence } from "./fleet-gate-presence.ts";

const log = getLogger("svc::jobs");

interface Claimed {
  job: string;
  etag: string;
  doc: GateDocument;
}

export class FleetGate extends FleetRemoteJobs implements MaintenanceWriteGate, MaintenanceFleet {
  readonly #o: Required<Omit<FleetGateOptions, "docs" | "local" | "adopt" | "instance" | "routes">>;
  readonly #local: MaintenanceWriteGate;
  readonly #claimed = new Map<string, Claimed>();
  /** Buckets engaged locally for another instance's job, with the local holder tag. */
  readonly #remote = new Map<string, string>();
  readonly #acked = new Set<string>();
  readonly #acking = new Set<string>();
  readonly #failedAt = new Map<string, number>();
  #hooks: FleetJobHooks | null = null;
  #timers: ReturnType<typeof setInterval>[] = [];
  readonly #presence: FleetPresence;
  #warnedAt = -Infinity;
  #ticking: Promise<void> | null = null;
  #writes: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: FleetGateOptions) {
    super(options.docs, options.instance);
    this.#local = options.local;
    this.#o = {
      now: options.now ?? Date.now,
      sleep: options.sleep ?? defaultSleep,
      refreshMs: options.refreshMs ?? 1000,
      heartbeatMs: options.heartbeatMs ?? 2000,
      presenceMs: options.presenceMs ?? 3000,
      liveMs: options.liveMs ?? 10_000,
      expireMs: options.expireMs ?? 30_000,
    };
    const { now, presenceMs } = this.#o;
    this.#presence = new FleetPresence(options.docs, options.instance, { now, presenceMs });
  }

  // --- MaintenanceWriteGate: the local gate, plus the fleet's acks in `drained`.

  holder(bucket: string): string | undefined {
    return this.#local.holder(bucket);
  }

  engage(bucket: string, jobId: string): void {
    this.#local.engage(bucket, jobId);
  }

  lift(bucket: string, jobId?: string): void {
    this.#local.lift(bucket, jobId);
    const claimed = this.#claimed.get(bucket);
    if (claimed === undefined || (jobId !== undefined && claimed.job !== jobId)) return;
    this.#claimed.delete(bucket);
    // A flip (a holder resumed after one) stays gated elsewhere until every live instance has it.
    const flip = claimed.doc.flip?.backend ?? null;
    const adopted = flip === null
      ? Promise.resolve()
      : this.waitAcks(bucket, claimed.job, flip, AbortSignal.timeout(10 * this.#o.expireMs));
    adopted.then(() => this.#serial(() => this.options.docs.remove(bucket))).catch((err) =>
      // Left behind, it stops gating once its heartbeat expires.
      log.warn("the fleet gate could not be removed", { bucket, error: messageOf(err) })
    );
  }

  async drained(bucket: string, signal?: AbortSignal): Promise<void> {
    await this.#local.drained(bucket, signal);
    const claimed = this.#claimed.get(bucket);
    if (claimed !== undefined) await this.waitAcks(bucket, claimed.job, null, signal);
  }

  // --- MaintenanceFleet: claims, heartbeats, the watcher.

  attach(hooks: FleetJobHooks): void {
    this.#hooks = hooks;
  }

  /** Why `bucket` cannot get a job now (held elsewhere), or null. */
  async check(bucket: string): Promise<string | null> {
    const stored = await this.options.docs.read(bucket);
    if (stored === null || this.#expired(stored.doc)) return null;
    if (stored.doc.holder === this.options.instance) return null;
    return `Bucket "${bucket}" is held by job ${stored.doc.job} on instance "${stored.doc.holder}"`;
  }

  async claim(job: JobRecord): Promise<"created" | "own" | "held"> {
    const { docs, instance } = this.options;
    const bucket = job.scope.bucket;
    let stored = await docs.read(bucket);
    if (stored && stored.doc.holder === instance && stored.doc.job === job.id) {
      this.#claimed.set(bucket, { job: job.id, etag: stored.etag, doc: stored.doc });
      return "own";
    }
    if (stored && this.#expired(stored.doc) && !stored.doc.flip) {
      await docs.remove(bucket);
      stored = null;
    }
    if (stored !== null) return "held";
    const now = this.#o.now();
    const doc: GateDocument = {
      bucket,
      job: job.id,
      type: job.type,
      holder: instance,
      created_at: now,
      heartbeat_at: now,
      row: (await this.#hooks?.row(job.id)) ?? {},
      cancel: null,
      flip: null,
    };
    const etag = await docs.create(doc);
    if (etag === null) {
      // A create retried after a lost answer fails its own condition: the gate is ours then.
      const won = await docs.read(bucket);
      if (won?.doc.holder !== instance || won.doc.job !== job.id) return "held";
      this.#claimed.set(bucket, { job: job.id, etag: won.etag, doc: won.doc });
      return "created";
    }
    this.#claimed.set(bucket, { job: job.id, etag, doc });
    return "created";
  }

  /** Waits until every live instance acked `job`'s gate (and adopted `flip`, when given). */
  async waitAcks(
    bucket: string,
    job: string,
    flip: string | null,
    signal?: AbortSignal,
  ): Promise<void> {
    const { docs, instance } = this.options;
    for (;;) {
      signal?.throwIfAborted();
      const live = await docs.live(this.#o.now(), this.#o.liveMs);
      const acks = await docs.acks(bucket, instance, job);
      const pending = [...live].filter((other) =>
        other !== instance &&
        (!acks.has(other) || (flip !== null && acks.get(other)!.flipped !== flip))
      );
      if (pending.length === 0) return;
      await this.#o.sleep(250, signal);
    }
  }

  /** The routing flip: applied here, published in the gate, adopted by every live instance. */
  async flip(bucket: string, backend: string, apply: () => Promise<void>, signal?: AbortSignal) {
    await apply();
    const claimed = this.#claimed.get(bucket);
    // Durable before the gate carries it: an instance down now adopts it when it comes back.
    await this.options.routes?.record(bucket, backend, claimed?.job ?? this.holder(bucket) ?? "");
    if (claimed === undefined) return;
    await this.#serial(async () => {
      claimed.doc = { ...claimed.doc, flip: { backend } };
      await this.#rewrite(bucket, claimed);
    });
    await this.waitAcks(bucket, claimed.job, backend, signal);
  }

  /** Presence and the first listing (before the listener opens; throws), then the timers. */
  async start(): Promise<void> {
    await this.#tick(); // a failure fails the boot: never serve writes blind to the gates
    this.#timers.push(setInterval(() => void this.tick(), this.#o.refreshMs));
    this.#timers.push(setInterval(() => void this.heartbeat(), this.#o.heartbeatMs));
  }

  async stop(): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    await this.#ticking;
    await this.#writes.catch(() => {});
    await this.#presence.leave(); // called once this instance's writes have ended (admin close)
  }

  /** One watcher step (one at a time); failures are logged, the next step tries again. */
  tick(): Promise<void> {
    this.#ticking ??= this.#tick().catch((err) => {
      // Once a minute, not every second, while the coordination bucket is out of reach.
      if (this.#o.now() - this.#warnedAt < 60_000) return;
      this.#warnedAt = this.#o.now();
      log.warn("the fleet's maintenance gates could not be read", { error: messageOf(err) });
    }).finally(() => this.#ticking = null);
    return this.#ticking;
  }

  async #tick(): Promise<void> {
    const { instance } = this.options;
    await this.#presence.tick();
    const seen = await this.#listGates();
    this.seen = seen;
    for (const [bucket, stored] of seen) {
      const doc = stored.doc;
      if (doc.holder === instance) {
        await this.#ownLeftover(bucket, doc);
        continue;
      }
      if (this.#expired(doc)) {
        await this.#lapsed(bucket, stored);
        continue;
      }
      const tag = `${doc.job}@${doc.holder}`;
      const current = this.#local.holder(bucket);
      // A local job's own gate is never overwritten (the claim keeps the two apart).
      if (current !== tag && (current === undefined || this.#remote.has(bucket))) {
        this.#local.engage(bucket, tag);
        this.#remote.set(bucket, tag);
      }
      void this.#answer(bucket, doc);
    }
    for (const [bucket, tag] of this.#remote) {
      const doc = seen.get(bucket)?.doc;
      if (doc === undefined || `${doc.job}@${doc.holder}` !== tag || this.#expired(doc)) {
        this.#local.lift(bucket, tag);
        this.#remote.delete(bucket);
      }
    }
    await this.options.routes?.sync();
  }

  async #listGates(): Promise<Map<string, StoredGate>> {
    const seen = new Map<string, StoredGate>();
    for (const { key, etag } of await this.options.docs.list(GATES_PREFIX)) {
      const name = key.slice(GATES_PREFIX.length);
      if (name.includes("/") || !name.endsWith(".json")) continue;
      const bucket = name.slice(0, -".json".length);
      const known = this.seen.get(bucket);
      const stored = known && known.etag === etag ? known : await this.options.docs.read(bucket);
      if (stored !== null) seen.set(bucket, stored);
    }
    return seen;
  }

  /** Drains this instance's writes to `bucket`, adopts the flip, then acks (once each). */
  async #answer(bucket: string, doc: GateDocument): Promise<void> {
    const flip = doc.flip?.backend ?? null;
    // Per gate document: a gate claimed anew for the same job (after a lapse) is answered again.
    const key = `${bucket}|${doc.holder}|${doc.job}|${doc.created_at}|${flip ?? ""}`;
    if (this.#acked.has(key) || this.#acking.has(key)) return;
    this.#acking.add(key);
    try {
      await this.#local.drained(bucket);
      if (flip !== null) await this.options.adopt(bucket, flip);
      await this.options.docs.ack(bucket, {
        instance: this.options.instance,
        holder: doc.holder,
        job: doc.job,
        drained_at: this.#o.now(),
        flipped: flip,
      });
      this.#acked.add(key);
    } catch (err) {
      // Retried every refresh; said once a minute (an adoption this instance cannot make).
      if (this.#o.now() - (this.#failedAt.get(key) ?? -Infinity) < 60_000) return;
      this.#failedAt.set(key, this.#o.now());
      log.warn("a fleet maintenance gate could not be answered; retried at the next refresh", {
        bucket,
        job: doc.job,
        holder: doc.holder,
        error: messageOf(err),
      });
    } finally {
      this.#acking.delete(key);
    }
  }

  /** A gate of a holder whose heartbeat expired: lifted (after its flip reached everyone). */
  async #lapsed(bucket: string, stored: StoredGate): Promise<void> {
    const { docs, instance } = this.options;
    const doc = stored.doc;
    if (doc.flip) await this.#answer(bucket, doc);
    if (!(await this.#flipAdopted(bucket, doc))) return;
    const again = await docs.read(bucket);
    if (again === null || again.etag !== stored.etag) return; // it moved: not lapsed after all
    log.warn("a maintenance gate's holder stopped its heartbeat; the gate is lifted", {
      bucket,
      job: doc.job,
      holder: doc.holder,
      by: instance,
    });
    await docs.remove(bucket);
  }

  /** Whether every live instance but the holder acked the gate's flip (true without one). */
  async #flipAdopted(bucket: string, doc: GateDocument): Promise<boolean> {
    if (!doc.flip) return true;
    const live = await this.options.docs.live(this.#o.now(), this.#o.liveMs);
    const acks = await this.options.docs.acks(bucket, doc.holder, doc.job);
    return [...live].every((i) => i === doc.holder || acks.get(i)?.flipped === doc.flip!.backend);
  }

  /**
   * A gate in this instance's name that no local job holds: a removal that failed, or the gate of
   * a migration resumed after its flip (removed once every live instance adopted the flip).
   */
  async #ownLeftover(bucket: string, doc: GateDocument): Promise<void> {
    if (this.#claimed.has(bucket) || this.#hooks === null) return;
    if (
      doc.flip ? !(await this.#flipAdopted(bucket, doc)) : (await this.#hooks.row(doc.job)) !== null
    ) {
      return;
    }
    await this.options.docs.remove(bucket);
  }

  #expired(doc: GateDocument): boolean {
    return this.#o.now() - doc.heartbeat_at > this.#o.expireMs;
  }

  /** Rewrites every claimed gate with its job's row; honours a cancel asked elsewhere. */
  heartbeat(): Promise<void> {
    return this.#serial(async () => {
      for (const [bucket, claimed] of [...this.#claimed]) {
        const row = await this.#hooks?.row(claimed.job);
        if (row === null || row === undefined) continue;
        claimed.doc = { ...claimed.doc, row };
        await this.#rewrite(bucket, claimed).catch((err) =>
          log.warn("the fleet gate's heartbeat failed", { bucket, error: messageOf(err) })
        );
      }
    });
  }

  /** Writes the claimed gate; merges a cancel written meanwhile; reports a gate lost. */
  async #rewrite(bucket: string, claimed: Claimed): Promise<void> {
    const { docs } = this.options;
    for (let attempt = 0; attempt < 3; attempt++) {
      const next = { ...claimed.doc, heartbeat_at: this.#o.now() };
      const etag = await docs.replace(next, claimed.etag);
      if (etag !== null) {
        claimed.etag = etag;
        claimed.doc = next;
        return;
      }
      const stored = await docs.read(bucket);
      if (
        stored === null || stored.doc.job !== claimed.job ||
        stored.doc.holder !== this.options.instance
      ) {
        this.#claimed.delete(bucket);
        await this.#hooks?.lost(claimed.job, `the fleet gate of bucket "${bucket}" was lifted`);
        return;
      }
      claimed.etag = stored.etag;
      if (stored.doc.cancel && !claimed.doc.cancel) {
        claimed.doc = { ...claimed.doc, cancel: stored.doc.cancel };
        await this.#hooks?.cancel(claimed.job, stored.doc.cancel.by).catch((err) =>
          log.warn("a cancel asked on another instance was refused", {
            job: claimed.job,
            error: messageOf(err),
          })
        );
      }
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(work, work);
    this.#writes = next.catch(() => {});
    return next;
  }
}
