/**
 * Usage counters fleet-wide (several svc instances over one backend, with a coordination bucket:
 * `advanced.config_sync_bucket`). Each instance tallies the writes made through it
 * (fleet-usage-tally.ts) and publishes the tally as `.svc/usage/<instance>.json` in the
 * coordination bucket, a moment after a write (`publishDelayMs`) and at close; each object is
 * written by its own instance only, so no write needs a condition. The usage answers (`/_/stats`,
 * `GET /usage`, `/usage/bucket/:bucket`) are the counter's totals at its last scan plus the
 * writes every instance made since: the others' from their documents (one listing and one GET
 * each, shared by the requests of `readCacheMs`), this one's as the counter stood when an answer
 * first met that scan (right after it, for the scans the admin plane starts) plus this
 * instance's tally since. The counter alone cannot go below zero, so an instance removing
 * objects another one wrote would lose bytes if its inline updates were used.
 * Quotas judge the same sum on the write path (`forQuota`), from the documents as last read
 * (refreshed in the background) so a write costs no backend round trip.
 *
 * Observing every bucket costs one metadata read per overwrite or removal (the object replaced),
 * which the counter alone spares for buckets it never counted; only fleets pay it. Documents of
 * stopped instances (not published for a week) are folded into one (fleet-usage-fold.ts).
 */
import { getLogger } from "../../observability/mod.ts";
import { BackendError, type ObjectInfo } from "../../storage/mod.ts";
import type { BucketUsage, WriteObserver } from "../../objects/mod.ts";
import type { CoordinationBucket } from "../../jobs/mod.ts";
import {
  type Delta,
  isTallyDocument,
  type TallyDocument,
  writesSince,
  WriteTally,
} from "./fleet-usage-tally.ts";
import {
  ABANDON_AFTER_MS,
  FOLD_AFTER_MS,
  FOLDED_INSTANCE,
  foldStale,
  HEARTBEAT_MS,
  isFolded,
  readFolded,
} from "./fleet-usage-fold.ts";

const log = getLogger("svc::fleet-usage");

export const USAGE_PREFIX = ".svc/usage/";

const keyOf = (instance: string) => `${USAGE_PREFIX}${encodeURIComponent(instance)}.json`;
const FOLDED_KEY = keyOf(FOLDED_INSTANCE);
/** How often an instance looks for stale documents to fold (when answering usage). */
const FOLD_CHECK_MS = 60 * 60 * 1000;

export interface FleetUsageOptions {
  /** Unique per process: a restarted instance publishes a new document. */
  instance: string;
  /** How long after a write its tally is published; default 1 s. */
  publishDelayMs?: number;
  /** How long the other instances' documents are reused; default 2 s. */
  readCacheMs?: number;
  /**
   * Quotas (the write path): documents up to this old are judged by at once (a fresher read
   * starts in the background); an older view is read first, once for the writes of that moment.
   * Default 5 s.
   */
  quotaStaleMs?: number;
  now?: () => number;
}

/** Keys of a ListObjectsV2 answer (the documents are few; no need for a full parser). */
function listedKeys(xml: string): { keys: string[]; truncated: boolean; next?: string } {
  const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => decodeXml(m[1]));
  const next = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1];
  return {
    keys,
    truncated: /<IsTruncated>true<\/IsTruncated>/.test(xml),
    next: next === undefined ? undefined : decodeXml(next),
  };
}

function decodeXml(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}

/** `usage` with its totals replaced by `totals` plus `writes` (never below zero). */
export function withWrites(usage: BucketUsage, totals: Delta, writes: Delta): BucketUsage {
  const count = Math.max(0, totals.count + writes.count);
  const logical = count === 0 ? 0 : Math.max(0, totals.logical + writes.logical);
  const stored = count === 0 ? 0 : Math.max(0, totals.stored + writes.stored);
  const savings = logical > 0 ? 100 * (1 - stored / logical) : 0;
  return {
    ...usage,
    object_count: count,
    logical_bytes: logical,
    stored_bytes: stored,
    savings_percentage: Math.round(savings * 100) / 100,
  };
}

export class FleetUsage implements WriteObserver {
  readonly #shared: CoordinationBucket;
  readonly #tally: WriteTally;
  readonly #publishDelayMs: number;
  readonly #readCacheMs: number;
  readonly #quotaStaleMs: number;
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #publishing: Promise<void> = Promise.resolve();
  #read: { at: number; docs: Promise<TallyDocument[]> } | undefined;
  /** The last documents read in full (the quota view judges by them). */
  #seen: { at: number; docs: TallyDocument[] } | undefined;
  #closed = false;
  #publishedAt = 0;
  #foldedAt = -Infinity;
  readonly #heartbeat: ReturnType<typeof setInterval>;

  /**
   * Per bucket: the counter when an answer first met its scan of `at`, and this instance's
   * tally then (its writes after that come from the tally).
   */
  readonly #bases = new Map<string, { at: number; counter: Delta; tally: Delta }>();

  constructor(
    shared: CoordinationBucket,
    options: FleetUsageOptions & { previous?: TallyDocument | null },
  ) {
    this.#shared = shared;
    this.#now = options.now ?? Date.now;
    this.#publishDelayMs = options.publishDelayMs ?? 1000;
    this.#readCacheMs = options.readCacheMs ?? 2000;
    this.#quotaStaleMs = options.quotaStaleMs ?? 5000;
    this.#tally = new WriteTally(options.instance, {
      onChange: () => this.#schedule(),
      now: this.#now,
      previous: options.previous,
    });
    // A live instance's document never looks stopped (fleet-usage-fold.ts).
    this.#heartbeat = setInterval(() => void this.publish(), HEARTBEAT_MS / 4);
    Deno.unrefTimer(this.#heartbeat);
  }

  /**
   * Opens the fleet usage of instance `instance` (stable across restarts): its last published
   * tally is read back and continued. When it cannot be read, or is older than ABANDON_AFTER_MS
   * (it may be folded meanwhile), a new id is taken instead (the old document stays as a stopped
   * instance's), so no published tally ever goes backwards or is counted twice.
   */
  static async open(shared: CoordinationBucket, options: FleetUsageOptions): Promise<FleetUsage> {
    try {
      const response = await shared.client.send({
        method: "GET",
        bucket: shared.bucket,
        key: keyOf(options.instance),
        idempotent: true,
      });
      const previous = JSON.parse(response.text);
      const now = (options.now ?? Date.now)();
      const fresh = isTallyDocument(previous) && now - previous.updated_at < ABANDON_AFTER_MS;
      if (fresh && previous.instance === options.instance) {
        return new FleetUsage(shared, { ...options, previous });
      }
    } catch (err) {
      if (err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket") {
        return new FleetUsage(shared, options);
      }
      log.warn("this instance's usage tally could not be read back; a new one is started", {
        bucket: shared.bucket,
        error: (err as Error).message,
      });
    }
    const instance = `${options.instance}-${crypto.randomUUID().slice(0, 8)}`;
    return new FleetUsage(shared, { ...options, instance });
  }

  get instance(): string {
    return this.#tally.instance;
  }

  tracks(): boolean {
    return true;
  }

  committed(bucket: string, info: ObjectInfo, replaced: ObjectInfo | null): void {
    this.#tally.committed(bucket, info, replaced);
  }

  removed(bucket: string, info: ObjectInfo): void {
    this.#tally.removed(bucket, info);
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.publish();
    }, this.#publishDelayMs);
  }

  /** Publishes the tally when it changed (one at a time, in order); failures are logged. */
  publish(): Promise<void> {
    this.#publishing = this.#publishing.then(async () => {
      const due = this.#now() - this.#publishedAt >= HEARTBEAT_MS;
      if (!this.#tally.dirty && !due) return;
      const doc = this.#tally.document();
      try {
        await this.#shared.client.send({
          method: "PUT",
          bucket: this.#shared.bucket,
          key: keyOf(doc.instance),
          headers: { "content-type": "application/json" },
          body: JSON.stringify(doc),
          idempotent: true,
        });
        this.#publishedAt = doc.updated_at;
      } catch (err) {
        log.warn("the usage tally could not be published; retried at the next write", {
          bucket: this.#shared.bucket,
          error: (err as Error).message,
        });
      }
    });
    return this.#publishing;
  }

  async #fetchAll(): Promise<TallyDocument[]> {
    const { client, bucket } = this.#shared;
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send({
        method: "GET",
        bucket,
        query: { "list-type": "2", prefix: USAGE_PREFIX, "continuation-token": token },
        idempotent: true,
      });
      const listed = listedKeys(page.text);
      keys.push(...listed.keys);
      token = listed.truncated ? listed.next : undefined;
    } while (token !== undefined);
    const own = keyOf(this.instance);
    const others = keys.filter((key) => key !== own && key !== FOLDED_KEY);
    const docs = await Promise.all(
      others.map(async (key) => {
        try {
          const response = await client.send({ method: "GET", bucket, key, idempotent: true });
          const parsed = JSON.parse(response.text);
          return isTallyDocument(parsed) ? parsed : null;
        } catch (err) {
          // Gone between the listing and the read, or damaged: left out.
          if (err instanceof BackendError && err.status === 404) return null;
          if (err instanceof SyntaxError) return null;
          throw err;
        }
      }),
    );
    const found = docs.filter((doc): doc is TallyDocument => doc !== null);
    // Read after the others: a document folded meanwhile is then counted once (in the fold).
    const folded = await readFolded(this.#shared, FOLDED_KEY);
    this.#foldStale(others, found);
    return [...found.filter((doc) => !isFolded(folded, doc)), ...(folded ? [folded] : [])];
  }

  /** Folds stopped instances' documents in the background, at most once per FOLD_CHECK_MS. */
  #foldStale(keys: string[], docs: TallyDocument[]): void {
    const now = this.#now();
    if (now - this.#foldedAt < FOLD_CHECK_MS) return;
    if (!docs.some((doc) => now - doc.updated_at >= FOLD_AFTER_MS)) return;
    this.#foldedAt = now;
    foldStale(this.#shared, FOLDED_KEY, keys, keyOf, now).catch((err) =>
      log.warn("stopped instances' usage tallies could not be folded; tried again later", {
        bucket: this.#shared.bucket,
        error: (err as Error).message,
      })
    );
  }

  /** The other instances' documents (cached `readCacheMs`; a failed read is not cached). */
  others(): Promise<TallyDocument[]> {
    const at = this.#now();
    if (this.#read && at - this.#read.at < this.#readCacheMs) return this.#read.docs;
    const docs = this.#fetchAll();
    const entry = { at, docs };
    this.#read = entry;
    docs.then((read) => {
      if (this.#seen === undefined || this.#seen.at <= at) this.#seen = { at, docs: read };
    }, () => {
      if (this.#read === entry) this.#read = undefined;
    });
    return docs;
  }

  /**
   * The fleet's usage of `bucket` from `usage`, this instance's counter: its totals at its last
   * scan plus every instance's writes since. A counter never scanned is left as it is (its first
   * scan will count everything). When the other documents cannot be read, this instance's
   * writes alone are added and the failure logged.
   */
  async adjust(bucket: string, usage: BucketUsage): Promise<BucketUsage> {
    if (usage.last_scan_at === null) return usage;
    let docs: TallyDocument[];
    try {
      docs = await this.others();
    } catch (err) {
      log.warn("the other instances' usage tallies could not be read; answering this one's", {
        bucket: this.#shared.bucket,
        error: (err as Error).message,
      });
      docs = [];
    }
    return this.#combine(bucket, usage, docs);
  }

  /**
   * The fleet's usage of `bucket` as a quota judges it on the write path, without a backend
   * round trip per write: the other instances' documents as last read (a fresher read starts in
   * the background once they are `readCacheMs` old), plus this instance's live tally. Only a view
   * older than `quotaStaleMs` (no write asked for a while) is read first; a failed read answers
   * with the last view (or this instance's writes alone). So a write misses the writes other
   * instances made within about the publish delay plus `readCacheMs` (plus one read) before it.
   */
  async forQuota(bucket: string, usage: BucketUsage): Promise<BucketUsage> {
    if (usage.last_scan_at === null) return usage;
    const seen = this.#seen;
    const age = seen === undefined ? Infinity : this.#now() - seen.at;
    let docs = seen?.docs ?? [];
    if (age > this.#quotaStaleMs) {
      docs = await this.others().catch(() => docs);
    } else if (age >= this.#readCacheMs) {
      this.others().catch(() => {}); // the next writes judge by it
    }
    return this.#combine(bucket, usage, docs);
  }

  #combine(bucket: string, usage: BucketUsage, docs: TallyDocument[]): BucketUsage {
    const at = usage.last_scan_at!;
    let base = this.#bases.get(bucket);
    if (base?.at !== at) {
      const counter = {
        count: usage.object_count,
        logical: usage.logical_bytes,
        stored: usage.stored_bytes,
      };
      base = { at, counter, tally: this.#tally.totals(bucket) };
      this.#bases.set(bucket, base);
    }
    const now = this.#tally.totals(bucket);
    const own = {
      count: now.count - base.tally.count,
      logical: now.logical - base.tally.logical,
      stored: now.stored - base.tally.stored,
    };
    const others = writesSince(docs, bucket, at);
    return withWrites(usage, base.counter, {
      count: own.count + others.count,
      logical: own.logical + others.logical,
      stored: own.stored + others.stored,
    });
  }

  /** Publishes the last writes. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.publish();
  }
}
