/**
 * Collects what one run reports: counters over the whole run, and the first `cap` candidates
 * and failures for the answer. Failures are also buffered for the rule's failure ring (written
 * by `flush`, every `FLUSH_EVERY` failures and at the end), except in a preview.
 */
import type {
  RunCandidate,
  RunCounters,
  RunFailure,
  RunRecorder as Recorder,
} from "./rule-model.ts";
import { emptyCounters } from "./rule-model.ts";

const FLUSH_EVERY = 50;

export interface PendingFailure {
  bucket: string;
  key: string;
  message: string;
  at: number;
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

export class RunRecorder implements Recorder {
  readonly counters: RunCounters;
  readonly candidates: RunCandidate[] = [];
  readonly failures: RunFailure[] = [];
  #pending: PendingFailure[] = [];
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly cap: number,
    private readonly now: () => number,
    /** Writes failures to the ring; absent in a preview. */
    private readonly persist?: (failures: PendingFailure[]) => Promise<void>,
    extra: Partial<RunCounters> = {},
  ) {
    this.counters = { ...emptyCounters(), ...extra };
  }

  candidate(candidate: RunCandidate): void {
    if (this.candidates.length < this.cap) this.candidates.push(candidate);
  }

  fail(bucket: string, key: string, error: unknown): void {
    const at = this.now();
    const message = messageOf(error);
    this.counters.errors++;
    if (this.failures.length < this.cap) {
      this.failures.push({ bucket, key, message, occurred_at: new Date(at).toISOString() });
    }
    if (!this.persist) return;
    this.#pending.push({ bucket, key, message, at });
    if (this.#pending.length >= FLUSH_EVERY) void this.flush().catch(() => {});
  }

  /** Writes buffered failures (in order; concurrent calls queue). */
  flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0 || !this.persist) return this.#flushing;
    const persist = this.persist;
    this.#flushing = this.#flushing.catch(() => {}).then(() => persist(batch));
    return this.#flushing;
  }
}
