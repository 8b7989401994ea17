/**
 * Writeback of a large file's data while it is still being written, so the fsync that makes it
 * durable at the commit has only the last few megabytes left to flush.
 *
 * The kernel starts writing dirty pages back on its own only past `dirty_background_ratio` of
 * memory (gigabytes here), so a 512 MiB upload left all of its bytes for the commit's fsync:
 * ~0.3-0.5 s at this disk's speed, a third of the whole PUT, with the CPU idle. Here every
 * `everyBytes` written start one `fdatasync` (never two at once) on a second, read-only
 * descriptor of the file: Deno runs the operations of one file handle one after the other, so a
 * sync through the writer's own handle would hold up its next write.
 *
 * Durability does not depend on this: the commit still fsyncs the file. A failed early sync
 * fails the upload (`settle` throws it), as the commit's own fsync would.
 */

/** Written bytes between two early syncs. */
export const WRITEBACK_EVERY_BYTES = 32 << 20;

export class EarlyWriteback {
  readonly #path: string;
  readonly #everyBytes: number;
  #unsynced = 0;
  #file: Deno.FsFile | undefined;
  #syncing: Promise<void> | undefined;
  #failure: { error: unknown } | undefined;
  #closed = false;

  constructor(path: string, everyBytes = WRITEBACK_EVERY_BYTES) {
    this.#path = path;
    this.#everyBytes = everyBytes;
  }

  /** `bytes` more are written to the file. */
  wrote(bytes: number): void {
    this.#unsynced += bytes;
    if (this.#unsynced < this.#everyBytes || this.#syncing || this.#failure || this.#closed) return;
    this.#unsynced = 0;
    this.#syncing = this.#sync().finally(() => this.#syncing = undefined);
  }

  /** Syncs started so far (tests). */
  syncs = 0;

  async #sync(): Promise<void> {
    try {
      this.#file ??= await Deno.open(this.#path, { read: true });
      this.syncs++;
      await this.#file.syncData();
    } catch (error) {
      this.#failure ??= { error };
    }
  }

  /** Waits for the sync in flight and closes the second descriptor; throws a failed sync's error. */
  async settle(): Promise<void> {
    this.#closed = true;
    await this.#syncing;
    try {
      this.#file?.close();
    } catch { /* already closed */ }
    this.#file = undefined;
    if (this.#failure) throw this.#failure.error;
  }
}
