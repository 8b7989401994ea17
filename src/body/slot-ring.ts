/**
 * The ring a large body is copied into on its way to hashes that run off the main thread
 * (threaded-hash.ts, hash-pool.ts): fixed slots, each handed on as it fills and reused only once
 * every reader is done with it, so memory per body is the ring whatever the body's size and the
 * upload runs at most a ring ahead of the slowest hash. Subclasses say how a slot is handed on
 * and how far their readers got.
 */
export abstract class SlotRing {
  /** Slots handed on so far; slot n lives at (n % slots) * slotBytes. */
  protected sent = 0;
  protected filled = 0;
  protected failed: Error | undefined;
  protected closed = false;
  #wakeUp: (() => void) | undefined;

  constructor(
    protected readonly bytes: Uint8Array,
    protected readonly slots: number,
    protected readonly slotBytes: number,
  ) {}

  /** Slots handed on that some reader has not finished with. */
  protected abstract busySlots(): number;

  /** Hands slot number `index` (`length` bytes at its place in the ring) to the readers. */
  protected abstract handOn(index: number, length: number): void;

  /** Copies `chunk` into the ring, handing each slot on as it fills; waits while the ring is full. */
  async write(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.byteLength;) {
      if (this.filled === 0) {
        await this.waitUntil(() => this.busySlots() < this.slots || this.closed);
      }
      if (this.failed) throw this.failed;
      if (this.closed) return;
      const n = Math.min(this.slotBytes - this.filled, chunk.byteLength - offset);
      const slotStart = (this.sent % this.slots) * this.slotBytes;
      this.bytes.set(chunk.subarray(offset, offset + n), slotStart + this.filled);
      this.filled += n;
      offset += n;
      if (this.filled === this.slotBytes) this.flush();
    }
  }

  /** Hands on the slot being filled, full or not (the body's end). */
  protected flush(): void {
    if (this.filled === 0) return;
    const length = this.filled;
    this.filled = 0;
    this.handOn(this.sent++, length);
  }

  /** Resolves once `done()` holds or the job failed; re-checked at every wake(). */
  protected async waitUntil(done: () => boolean): Promise<void> {
    while (!done() && !this.failed) {
      await new Promise<void>((resolve) => this.#wakeUp = resolve);
      this.#wakeUp = undefined;
    }
  }

  /** A reader progressed, failed or the job closed: waiters look again. */
  protected wake(): void {
    this.#wakeUp?.();
  }
}
