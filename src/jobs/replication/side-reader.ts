/**
 * One side (source or destination) of one directory of a reconcile walk: its delimiter listing
 * read page by page in key order, entries relative to the directory. A reader holds at most one
 * page; `start` begins fetching the first page early (the walk prefetches the next sibling
 * directories, so up to `dir_concurrency` listings are in flight while one is processed).
 */
import { compareUtf8, type Semaphore } from "../../lib/mod.ts";
import type { ListPage, ObjectInfo } from "../../storage/mod.ts";

/** A listing entry: an object, or a common prefix (a subdirectory) when `info` is null. */
export interface Entry {
  /** The key or common prefix without the directory's prefix. */
  rel: string;
  info: ObjectInfo | null;
}

/** A listing failed: the run fails with a single failure row for it. */
export class ListingError extends Error {
  constructor(readonly bucket: string, readonly prefix: string, cause: unknown) {
    super(
      `Listing "${bucket}/${prefix}" failed: ${cause instanceof Error ? cause.message : cause}`,
      { cause },
    );
    this.name = "ListingError";
  }
}

export interface ReaderDeps {
  list(bucket: string, options: {
    prefix: string;
    delimiter: string;
    startAfter?: string;
    maxKeys: number;
  }): Promise<ListPage>;
  /** Bounds the listings in flight across the walk (`dir_concurrency`). */
  limiter: Semaphore;
  pageSize: number;
  /** "/" for the walk's directory listings (the default); "" for a flat listing. */
  delimiter?: string;
  signal: AbortSignal;
  onList(): void;
}

export class SideReader {
  #buffer: Entry[] = [];
  #index = 0;
  #after: string | undefined;
  #done: boolean;
  #pending: Promise<void> | null = null;

  /** `absent`: the directory is known not to exist on this side (no listing is made). */
  constructor(
    private readonly deps: ReaderDeps,
    private readonly bucket: string,
    private readonly prefix: string,
    startAfterRel: string | undefined,
    absent = false,
  ) {
    this.#after = startAfterRel === undefined ? undefined : prefix + startAfterRel;
    this.#done = absent;
  }

  /** Starts fetching the first page (idempotent). */
  start(): void {
    if (!this.#done && this.#pending === null && this.#index >= this.#buffer.length) {
      this.#pending = this.#fill();
      this.#pending.catch(() => {}); // observed by peek
    }
  }

  async peek(): Promise<Entry | null> {
    while (this.#index >= this.#buffer.length && !this.#done) {
      this.start();
      const pending = this.#pending!;
      await pending;
      this.#pending = null;
    }
    return this.#buffer[this.#index] ?? null;
  }

  /**
   * What `peek` would answer when that needs no listing (an entry of the page held, or null at
   * the end); undefined when it does. Lets the walk merge a held page without a promise per entry.
   */
  peekHeld(): Entry | null | undefined {
    if (this.#index < this.#buffer.length) return this.#buffer[this.#index];
    return this.#done ? null : undefined;
  }

  /** The entry `peek` returned; call only after it returned one. */
  shift(): Entry {
    return this.#buffer[this.#index++];
  }

  async #fill(): Promise<void> {
    const { limiter, signal } = this.deps;
    await limiter.acquire(signal);
    let page: ListPage;
    try {
      this.deps.onList();
      page = await this.deps.list(this.bucket, {
        prefix: this.prefix,
        delimiter: this.deps.delimiter ?? "/",
        startAfter: this.#after,
        maxKeys: this.deps.pageSize,
      });
    } catch (err) {
      throw new ListingError(this.bucket, this.prefix, err);
    } finally {
      limiter.release();
    }
    const entries: Entry[] = [
      ...page.objects.map((info) => ({ rel: info.key.slice(this.prefix.length), info })),
      ...page.commonPrefixes.map((p) => ({ rel: p.slice(this.prefix.length), info: null })),
    ];
    entries.sort((a, b) => compareUtf8(a.rel, b.rel));
    this.#buffer = entries;
    this.#index = 0;
    this.#after = page.nextStartAfter;
    this.#done = !page.isTruncated || page.nextStartAfter === undefined;
  }
}
