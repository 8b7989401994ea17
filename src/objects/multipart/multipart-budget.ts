/**
 * The global in-flight multipart byte cap (`max_total_multipart_bytes`, SPEC.md: exceeding it is
 * a SlowDown rejection). In flight means held by uploads not yet completed or aborted: the parts
 * already stored plus the part bodies being received. A part is admitted only if its declared
 * length fits what is left; a part of unknown length may take at most what is left (the store
 * cuts it there). Totals are per upload, so replacing a part or removing an upload (complete,
 * abort, sweep, bucket purge) corrects them exactly; they are read from the store once, at the
 * first part after a start, so a restart does not forget what earlier uploads hold.
 */
import { SvcError } from "../../lib/mod.ts";

export interface BudgetSource {
  /** Upload ids in progress. */
  uploads(): Promise<string[]>;
  /** Bytes the stored parts of one upload hold. */
  storedBytes(uploadId: string): Promise<number>;
}

export interface Reservation {
  /** The most this part may grow to within the cap (Infinity: no cap in the way). */
  maxBytes: number;
  /** Records what the part finally holds and ends the reservation (`null`: it was not stored). */
  settle(stored: number | null): void;
}

export class MultipartBudget {
  readonly #source: BudgetSource;
  /** Stored bytes per upload (loaded lazily). */
  #stored: Map<string, number> | null = null;
  #loading: Promise<Map<string, number>> | null = null;
  /** Bytes reserved by part bodies being received. */
  #receiving = 0;

  constructor(source: BudgetSource) {
    this.#source = source;
  }

  async #totals(): Promise<Map<string, number>> {
    if (this.#stored) return this.#stored;
    this.#loading ??= (async () => {
      const totals = new Map<string, number>();
      for (const id of await this.#source.uploads()) {
        totals.set(id, await this.#source.storedBytes(id));
      }
      this.#stored = totals;
      return totals;
    })();
    try {
      return await this.#loading;
    } catch (err) {
      this.#loading = null; // a failed read is retried by the next part, never read as zero
      throw err;
    }
  }

  /** Bytes held now (read from the store first if not yet loaded). */
  async heldBytes(): Promise<number> {
    await this.#totals();
    return this.held();
  }

  /** Bytes held now: stored parts of every upload plus bodies being received. */
  held(): number {
    let total = this.#receiving;
    for (const bytes of this.#stored?.values() ?? []) total += bytes;
    return total;
  }

  /**
   * Admits a part of `uploadId` whose other parts hold `others` bytes, or throws SlowDown.
   * `declared` is the body's length when known.
   */
  async reserve(
    uploadId: string,
    others: number,
    declared: number | undefined,
    cap: number,
  ): Promise<Reservation> {
    const totals = await this.#totals();
    // Without this upload's own entry: its other parts are `others`, its old copy of this part
    // is being replaced.
    const held = this.held() - (totals.get(uploadId) ?? 0) + others;
    const left = cap - held;
    if ((declared ?? 0) > left || left <= 0) {
      throw new SvcError(
        "SlowDown",
        `Multipart uploads in progress hold ${held} bytes; this part would pass ` +
          `max_total_multipart_bytes (${cap}): complete or abort uploads, or retry later`,
      );
    }
    const reserved = declared ?? left;
    this.#receiving += reserved;
    let settled = false;
    return {
      maxBytes: declared === undefined ? left : Infinity,
      settle: (stored) => {
        if (settled) return;
        settled = true;
        this.#receiving -= reserved;
        if (stored !== null) totals.set(uploadId, others + stored);
      },
    };
  }

  /** The upload is gone (completed, aborted, swept, purged): its bytes are free. */
  forget(uploadId: string): void {
    this.#stored?.delete(uploadId);
  }
}
