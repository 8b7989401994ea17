/**
 * The event-driven path of replication: drains `event_outbox` rows after its cursor (rows of
 * every status: delivery to webhooks is another consumer), compacts them per (bucket, key),
 * fans each key out to every active rule (enabled, not paused, replication switched on) whose
 * source covers it, and applies the planner to a fresh source HEAD and destination HEAD — the
 * event only says which key to look at, so a burst of writes to one key costs one copy of its
 * latest state. The cursor is saved after the batch is applied: delivery is at-least-once.
 *
 * A key whose copy fails is recorded in the rule's failure ring and left to the full reconcile,
 * the backstop for everything this path misses: events of a paused rule, rows pruned before they
 * were read, writes while the outbox was off (`event_delivery.outbox: false`).
 */
import type { ReplicationRule } from "../../config/mod.ts";
import { mapConcurrent, SvcError } from "../../lib/mod.ts";
import type { OutboxRow } from "../../events/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import type { RuleEnv } from "../rules/rule-env.ts";
import { messageOf, type PendingFailure, RunRecorder } from "../rules/run-recorder.ts";
import { ensureBucket } from "./reconcile-run.ts";
import { RuleScope } from "./replication-scope.ts";
import { Replicator } from "./replicator.ts";

const log = getLogger("svc::replication");

export interface ConsumerDeps {
  env: RuleEnv;
  outbox: { after(afterId: number, limit: number): Promise<OutboxRow[]> };
  cursor: { read(): Promise<number>; write(id: number): Promise<void> };
  /** The configured rules. */
  rules(): ReplicationRule[];
  /** Whether the rule runs on events now (enabled, not paused, kind switched on). */
  active(name: string): Promise<boolean>;
  /** Appends to the rule's failure ring. */
  addFailures(name: string, failures: PendingFailure[]): Promise<void>;
  maxFailures(): number;
  /** Idle wait between two polls (ms). */
  pollMs?: number;
  /** Rows per batch. */
  batch?: number;
}

export class OutboxConsumer {
  readonly #deps: ConsumerDeps;
  readonly #stopping = new AbortController();
  #loop: Promise<void> | null = null;
  /** The cursor as last read or written (this consumer is its only writer). */
  #position: number | null = null;

  constructor(deps: ConsumerDeps) {
    this.#deps = deps;
  }

  start(): void {
    if (this.#loop) return;
    this.#loop = (async () => {
      const signal = this.#stopping.signal;
      const clock = this.#deps.env.clock;
      while (!signal.aborted) {
        let handled = 0;
        try {
          handled = await this.drain();
        } catch (err) {
          if (signal.aborted) break;
          log.warn("replication event batch failed; retried", { error: messageOf(err) });
        }
        if (handled === 0) await clock.sleep(this.#deps.pollMs ?? 250, signal).catch(() => {});
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopping.abort(new Error("svc is stopping"));
    await this.#loop?.catch(() => {});
  }

  /** Applies one batch of rows after the cursor; returns how many rows it consumed. */
  async drain(): Promise<number> {
    const deps = this.#deps;
    const after = this.#position ??= await deps.cursor.read();
    const rows = await deps.outbox.after(after, deps.batch ?? 500);
    if (rows.length === 0) return 0;
    const config = deps.env.config();
    const rules: ReplicationRule[] = [];
    if (config.storage.replication.enabled) {
      for (const rule of deps.rules()) {
        if (await deps.active(rule.name)) rules.push(rule);
      }
    }
    if (rules.length > 0) await this.#apply(rows, rules);
    const last = rows[rows.length - 1].id;
    await deps.cursor.write(last);
    this.#position = last;
    return rows.length;
  }

  async #apply(rows: OutboxRow[], rules: ReplicationRule[]): Promise<void> {
    const deps = this.#deps;
    const env = deps.env;
    const signal = this.#stopping.signal;
    // Latest row per (bucket, key); the HEADs below read the current state anyway.
    const keys = new Map<string, { bucket: string; key: string }>();
    for (const row of rows) {
      keys.set(`${row.event.bucket}\u0000${row.event.key}`, row.event);
    }
    for (const rule of rules) {
      const scope = new RuleScope(rule);
      const wanted = [...keys.values()].filter((k) =>
        scope.covers(k.bucket, k.key) && scope.skipReason(k.key) === null
      );
      if (wanted.length === 0) continue;
      const recorder = new RunRecorder(
        deps.maxFailures(),
        () => env.clock.now(),
        (failures) => deps.addFailures(rule.name, failures),
      );
      try {
        const kinds = await Promise.all([
          env.backendKind(scope.sourceBucket),
          env.backendKind(scope.destinationBucket),
        ]);
        const replicator = new Replicator(rule, env, recorder, false, kinds.includes("s3"));
        if (replicator.destinationBlocked() === null) {
          await ensureBucket(env, scope.destinationBucket, false);
        }
        await mapConcurrent(wanted, env.config().advanced.replication_transfers, async (k) => {
          if (signal.aborted) return;
          try {
            const source = await this.#head(scope.sourceBucket, k.key);
            const destination = await this.#head(
              scope.destinationBucket,
              scope.toDestination(k.key),
            );
            await replicator.apply(k.key, source, destination?.meta ?? null, signal);
          } catch (err) {
            if (signal.aborted) return;
            recorder.fail(scope.sourceBucket, k.key, err);
          }
        });
      } catch (err) {
        recorder.fail(scope.sourceBucket, "", err);
      }
      await recorder.flush().catch((err) =>
        log.warn("replication failure rows not written", { rule: rule.name, error: messageOf(err) })
      );
    }
    if (signal.aborted) throw signal.reason;
  }

  async #head(bucket: string, key: string): Promise<ObjectInfo | null> {
    this.#deps.env.metrics.replication.headCalls.inc();
    try {
      return await this.#deps.env.objects().head(bucket, key);
    } catch (err) {
      if (err instanceof SvcError && err.code === "NoSuchKey") return null;
      throw err;
    }
  }
}
