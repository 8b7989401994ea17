/**
 * An instance's presence in the fleet (`_svc/instances/<id>.json`, fleet-gate-docs.ts): what
 * makes it "live" for the maintenance gate's drain handshake (fleet-gate.ts). Written every
 * `presenceMs` by the gate's watcher. Kept tidy, since ids are stable but instances come and go:
 *
 * - **Leave.** A clean shutdown deletes the instance's own document (best effort, waited for at
 *   most `leaveWaitMs`), after its listener closed and its writes ended, so gates stop waiting
 *   for it at once instead of for `liveMs`; a failed delete is the old case of a silent instance.
 * - **Sweep.** At most once per `sweepEveryMs` the watcher removes, in the background, documents
 *   not rewritten for `staleMs` (7 days, by the coordination bucket's Last-Modified): a stopped
 *   instance would otherwise be listed and read at every liveness check forever. An instance that
 *   returns after a week writes its document again within `presenceMs`.
 */
import { getLogger } from "../../observability/mod.ts";
import type { GateStore } from "./fleet-gate-docs.ts";
import { messageOf } from "./job-steps.ts";

const log = getLogger("svc::jobs");

export interface PresenceOptions {
  now: () => number;
  presenceMs: number;
  sweepEveryMs?: number;
  staleMs?: number;
  leaveWaitMs?: number;
}

export const PRESENCE_SWEEP_MS = 3_600_000;
export const PRESENCE_STALE_MS = 7 * 24 * 3_600_000;

type PresenceDocs = Pick<GateStore, "present" | "absent" | "sweepPresence">;

export class FleetPresence {
  readonly #o: Required<PresenceOptions>;
  #lastWrite = -Infinity;
  #lastSweep = -Infinity;
  #sweeping: Promise<void> | null = null;
  #left = false;

  constructor(
    private readonly docs: PresenceDocs,
    private readonly instance: string,
    options: PresenceOptions,
  ) {
    this.#o = {
      sweepEveryMs: PRESENCE_SWEEP_MS,
      staleMs: PRESENCE_STALE_MS,
      leaveWaitMs: 2000,
      ...options,
    };
  }

  /** One watcher step: the presence when due (a failure throws), then a sweep when due. */
  async tick(): Promise<void> {
    if (this.#left) return;
    const now = this.#o.now();
    if (now - this.#lastWrite >= this.#o.presenceMs) {
      await this.docs.present(this.instance, now);
      this.#lastWrite = now;
    }
    if (this.#sweeping === null && now - this.#lastSweep >= this.#o.sweepEveryMs) {
      this.#lastSweep = now;
      this.#sweeping = this.#sweep(now).finally(() => this.#sweeping = null);
    }
  }

  /** The sweep in flight, if any (tests wait for it). */
  get sweeping(): Promise<void> | null {
    return this.#sweeping;
  }

  async #sweep(now: number): Promise<void> {
    try {
      const removed = await this.docs.sweepPresence(now - this.#o.staleMs);
      if (removed.length > 0) {
        log.info("removed the presence of instances silent for a week", { instances: removed });
      }
    } catch (err) {
      // The next sweep (an hour later) tries again; stale documents only cost a read each.
      log.warn("stale fleet presence documents could not be removed", { error: messageOf(err) });
    }
  }

  /** Deletes this instance's presence at shutdown; no further presence is written. */
  async leave(): Promise<void> {
    this.#left = true;
    // Settles either way, so a delete still running after the wait rejects nowhere.
    const work = (async () => {
      await this.#sweeping;
      await this.docs.absent(this.instance);
    })().then(() => null, (err: unknown) => messageOf(err));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`no answer within ${this.#o.leaveWaitMs} ms`),
        this.#o.leaveWaitMs,
      );
    });
    const failed = await Promise.race([work, timeout]).finally(() => clearTimeout(timer));
    if (failed !== null) {
      // Then it stops counting as live after `liveMs`, and the sweep removes it in a week.
      log.warn("this instance's fleet presence could not be removed", {
        instance: this.instance,
        error: failed,
      });
    }
  }
}
