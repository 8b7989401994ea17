/**
 * The durable side of a migration's routing flip in a fleet: `_svc/routes/<bucket>.json` in the
 * coordination bucket names the backend the bucket was last migrated to (`RouteRecord`). The gate
 * carries a flip only to the instances live at the time; the record reaches the others, one that
 * was down during the flip or joins later with a config file that still routes the bucket to the
 * source (whose copy the migration may have removed since).
 *
 * - **Written** by the migration's holder right after its own config apply of the flip, before it
 *   publishes the flip in the gate (so before the gate lifts and the source cleanup starts). Each
 *   write is conditional on the record it read (`If-None-Match: *` or `If-Match`): two flips of a
 *   bucket never interleave, the later replaces the earlier whole.
 * - **Read** by every instance at boot (with its first gate listing, before its listener opens: a
 *   failed read fails the boot) and with each periodic gate listing.
 * - **Adoption rule.** A record is adopted at most once per instance. This instance keeps, per
 *   bucket, the identity of the last record it settled (`settled`, the config database's node-local
 *   meta). A record not settled yet whose backend differs from this instance's effective route is
 *   adopted through the config apply path the gate's flip uses (persisted, audited) and settled.
 *   A settled record is never applied again: a route the operator sets locally afterwards (admin
 *   API, config file and SIGHUP) is theirs and stays. A change made while the instance was down,
 *   before it saw the record, cannot be told from a stale file and the record wins over it.
 * - **Cannot adopt** (the backend is unknown here, or the apply is refused): the bucket is fenced
 *   (`fence`: every request on it answers 503 ServiceUnavailable) and the reason logged, until a
 *   later listing adopts the record or finds the route matching; it is never served from the old
 *   backend meanwhile.
 */
import { getLogger } from "../../observability/mod.ts";
import { BackendError, type S3Client } from "../../storage/mod.ts";
import { messageOf } from "./job-steps.ts";
import { readDocument } from "../rules/coordination.ts";

const log = getLogger("svc::jobs");

export const ROUTES_PREFIX = "_svc/routes/";

export interface RouteRecord {
  bucket: string;
  /** The backend the bucket lives on since the flip. */
  backend: string;
  /** The migration's id on its holder. */
  job: string;
  /** The instance that ran the migration. */
  holder: string;
  /** The holder's clock at the flip (Unix ms). */
  at: number;
}

export interface StoredRoute {
  record: RouteRecord;
  etag: string;
}

/** What the route records need of the coordination bucket (RouteDocs; in memory in tests). */
export interface RouteStore {
  list(): Promise<{ bucket: string; etag: string }[]>;
  read(bucket: string): Promise<StoredRoute | null>;
  /** Writes if the record is still the one `etag` names (null: absent); false when it moved. */
  write(record: RouteRecord, etag: string | null): Promise<boolean>;
}

/** The identity a settled record is kept under (a record rewritten by a later flip differs). */
export const routeIdentity = (r: RouteRecord) => `${r.job}@${r.holder}@${r.at}@${r.backend}`;

const routeKey = (bucket: string) => `${ROUTES_PREFIX}${bucket}.json`;

function isRoute(value: unknown): value is RouteRecord {
  const r = value as Partial<RouteRecord> | null;
  return typeof r?.bucket === "string" && typeof r.backend === "string" &&
    typeof r.job === "string" && typeof r.holder === "string" && typeof r.at === "number";
}

export class RouteDocs implements RouteStore {
  constructor(
    readonly client: S3Client,
    readonly bucket: string,
    readonly lister: (prefix: string) => Promise<{ key: string; etag: string }[]>,
  ) {}

  async list(): Promise<{ bucket: string; etag: string }[]> {
    return (await this.lister(ROUTES_PREFIX))
      .filter(({ key }) => key.endsWith(".json") && !key.slice(ROUTES_PREFIX.length).includes("/"))
      .map(({ key, etag }) => ({ bucket: key.slice(ROUTES_PREFIX.length, -".json".length), etag }));
  }

  async read(bucket: string): Promise<StoredRoute | null> {
    const got = await readDocument(this.client, this.bucket, routeKey(bucket));
    // A damaged record reads as none: no route is adopted from it.
    return got !== null && isRoute(got.value) ? { record: got.value, etag: got.etag } : null;
  }

  async write(record: RouteRecord, etag: string | null): Promise<boolean> {
    try {
      await this.client.send({
        method: "PUT",
        bucket: this.bucket,
        key: routeKey(record.bucket),
        headers: {
          "content-type": "application/json",
          ...(etag === null ? { "if-none-match": "*" } : { "if-match": etag }),
        },
        body: JSON.stringify(record),
        idempotent: true, // repeated after an unknown outcome, it at worst fails its condition
      });
      return true;
    } catch (err) {
      if (err instanceof BackendError && [404, 409, 412].includes(err.status)) return false;
      throw err;
    }
  }
}

export interface FleetRoutesOptions {
  store: RouteStore;
  instance: string;
  /** This instance's effective backend for `bucket` (its running config), if routed. */
  routedTo(bucket: string): string | undefined;
  /** Whether this instance has a backend of that name. */
  known(backend: string): boolean;
  /** Routes `bucket` to the record's backend through the config apply path (persisted, audited). */
  adopt(record: RouteRecord): Promise<void>;
  /** The identity of the record last settled for `bucket` here (node-local), or null. */
  settled(bucket: string): Promise<string | null>;
  settle(bucket: string, identity: string): Promise<void>;
  /** Refuses every request on `bucket` with this reason (503), or lets them pass again (null). */
  fence(bucket: string, reason: string | null): void;
  now?: () => number;
}

export class FleetRoutes {
  readonly #seen = new Map<string, StoredRoute>();
  readonly #fenced = new Set<string>();
  readonly #saidAt = new Map<string, number>();
  /** The settled identities read once from `settled` (each listing would read them again). */
  readonly #settled = new Map<string, string | null>();

  constructor(private readonly o: FleetRoutesOptions) {}

  #now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** The holder's record of its flip (after its own apply); throws when it cannot be written. */
  async record(bucket: string, backend: string, job: string): Promise<void> {
    const { store, instance } = this.o;
    const record: RouteRecord = { bucket, backend, job, holder: instance, at: this.#now() };
    for (let attempt = 0; attempt < 5; attempt++) {
      const stored = await store.read(bucket);
      const same = stored?.record;
      // A write repeated after a lost answer finds itself there.
      if (same && same.job === job && same.holder === instance && same.backend === backend) return;
      if (await store.write(record, stored?.etag ?? null)) {
        await this.#settle(bucket, routeIdentity(record));
        return;
      }
    }
    throw new Error(`The route record of bucket "${bucket}" kept changing under its write`);
  }

  /** Reads every record (only those whose ETag changed) and applies the adoption rule. */
  async sync(): Promise<void> {
    const listed = await this.o.store.list();
    const present = new Set<string>();
    for (const { bucket, etag } of listed) {
      present.add(bucket);
      const known = this.#seen.get(bucket);
      const stored = known && known.etag === etag ? known : await this.o.store.read(bucket);
      if (stored === null) continue;
      this.#seen.set(bucket, stored);
      await this.#apply(stored.record);
    }
    for (const bucket of [...this.#fenced]) {
      if (!present.has(bucket)) this.#unfence(bucket); // its record was removed by the operator
    }
  }

  async #settledOf(bucket: string): Promise<string | null> {
    if (!this.#settled.has(bucket)) this.#settled.set(bucket, await this.o.settled(bucket));
    return this.#settled.get(bucket)!;
  }

  async #settle(bucket: string, identity: string): Promise<void> {
    if (this.#settled.get(bucket) === identity) return;
    await this.o.settle(bucket, identity);
    this.#settled.set(bucket, identity);
  }

  async #apply(record: RouteRecord): Promise<void> {
    const { bucket, backend } = record;
    const identity = routeIdentity(record);
    const local = this.o.routedTo(bucket);
    if (local === backend) {
      this.#unfence(bucket);
      if ((await this.#settledOf(bucket)) !== identity) await this.#settle(bucket, identity);
      return;
    }
    if ((await this.#settledOf(bucket)) === identity) {
      this.#unfence(bucket); // the operator routed it elsewhere after this record: theirs
      return;
    }
    let why: string;
    if (!this.o.known(backend)) {
      why = `Backend "${backend}" is not configured on this instance`;
    } else {
      try {
        await this.o.adopt(record);
        await this.#settle(bucket, identity);
        this.#unfence(bucket);
        log.info("adopted a migration's route record", { bucket, backend, from: local ?? null });
        return;
      } catch (err) {
        why = messageOf(err);
      }
    }
    const reason = `Bucket "${bucket}" was migrated to backend "${backend}" (job ${record.job} ` +
      `on "${record.holder}"), which this instance cannot route to: ${why}`;
    this.o.fence(bucket, reason);
    this.#fenced.add(bucket);
    if (this.#now() - (this.#saidAt.get(bucket) ?? -Infinity) >= 60_000) {
      this.#saidAt.set(bucket, this.#now());
      log.error("a migration's route record cannot be adopted; the bucket is refused (503)", {
        bucket,
        backend,
        job: record.job,
        holder: record.holder,
        error: why,
      });
    }
  }

  #unfence(bucket: string): void {
    if (!this.#fenced.delete(bucket)) return;
    this.o.fence(bucket, null);
    this.#saidAt.delete(bucket);
  }
}
