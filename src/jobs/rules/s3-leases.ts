/**
 * Rule leases as objects in a coordination bucket (`advanced.config_sync_bucket`), so several
 * svc instances can share a rule: `_svc/leases/<kind>/<name>.json` holds `{holder, token,
 * acquired_at, expires_at}`. Every change is a conditional write — `If-None-Match: *` creates
 * the first lease, `If-Match: <etag>` replaces one — so of two instances racing for a lease
 * exactly one write succeeds and the other gets 412. Release writes an already-expired lease
 * the same way (a conditional DELETE is not portable). Expiry compares the writer's and the
 * reader's clocks: instances must keep their clocks within a small fraction of `lease_ttl`.
 *
 * A release records `released_at`: a scheduled run elsewhere skips the rule while that is recent
 * (`notRunWithinMs`, fleet-rules.ts). `expire` ends another instance's lease (a kill from
 * another instance): its next renewal fails its condition and its run stops.
 */
import type { LeaseHolder } from "./rule-store.ts";
import { BackendError, type S3Client } from "../../storage/mod.ts";
import type { AcquireOptions, Lease, Leases, RunEnd } from "./leases.ts";

interface LeaseDocument {
  holder: string;
  token: string;
  acquired_at: number;
  expires_at: number;
  /** When the last run released the lease (Unix ms). */
  released_at?: number;
  /** How that run ended, and where. */
  last_run?: LastRun;
}

/** The last run of a rule anywhere in the fleet. */
export interface LastRun extends RunEnd {
  holder: string;
  finished_at: number;
}

interface Stored {
  doc: LeaseDocument | null;
  etag: string;
}

export function leaseKey(id: string): string {
  const colon = id.indexOf(":");
  return `_svc/leases/${id.slice(0, colon)}/${id.slice(colon + 1)}.json`;
}

const preconditionFailed = (err: unknown) =>
  err instanceof BackendError && (err.status === 412 || err.status === 409);

export class S3Leases implements Leases {
  /** The ETag of each lease this instance wrote last (the If-Match of its renewal). */
  readonly #etags = new Map<string, string>();

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly instance: string,
    private readonly now: () => number = Date.now,
  ) {}

  async #read(id: string): Promise<Stored | null> {
    try {
      const response = await this.client.send({
        method: "GET",
        bucket: this.bucket,
        key: leaseKey(id),
        idempotent: true,
      });
      const etag = response.headers.get("etag") ?? "";
      let doc: LeaseDocument | null = null;
      try {
        const parsed = JSON.parse(response.text);
        if (typeof parsed?.token === "string" && typeof parsed?.expires_at === "number") {
          doc = parsed;
        }
      } catch { /* a damaged lease object is treated as expired and replaced */ }
      return { doc, etag };
    } catch (err) {
      if (err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket") {
        return null;
      }
      throw err;
    }
  }

  /** Writes `doc` if the object is still what we read (`etag`) or absent (null); else false. */
  async #write(id: string, doc: LeaseDocument, etag: string | null): Promise<boolean> {
    try {
      const response = await this.client.send({
        method: "PUT",
        bucket: this.bucket,
        key: leaseKey(id),
        headers: {
          "content-type": "application/json",
          ...(etag === null ? { "if-none-match": "*" } : { "if-match": etag }),
        },
        body: JSON.stringify(doc),
        // Repeating a conditional write whose first outcome is unknown is harmless: at worst it
        // fails its condition, and the lease is judged again at the next heartbeat.
        idempotent: true,
      });
      this.#etags.set(id, response.headers.get("etag") ?? "");
      return true;
    } catch (err) {
      if (preconditionFailed(err)) return false;
      throw err;
    }
  }

  async acquire(id: string, ttlMs: number, options: AcquireOptions = {}): Promise<Lease | null> {
    const stored = await this.#read(id);
    const now = this.now();
    // This instance's own lease (a release that failed) is taken over, as in leases.ts.
    if (stored?.doc && stored.doc.expires_at > now && stored.doc.holder !== this.instance) {
      return null;
    }
    const released = stored?.doc?.released_at;
    if (
      options.notRunWithinMs !== undefined && released !== undefined &&
      now - released < options.notRunWithinMs
    ) return null;
    const token = crypto.randomUUID();
    const doc = { holder: this.instance, token, acquired_at: now, expires_at: now + ttlMs };
    return await this.#write(id, doc, stored === null ? null : stored.etag) ? { id, token } : null;
  }

  async renew(lease: Lease, ttlMs: number): Promise<boolean> {
    const etag = this.#etags.get(lease.id);
    if (etag === undefined) return false;
    const now = this.now();
    return await this.#write(lease.id, {
      holder: this.instance,
      token: lease.token,
      acquired_at: now,
      expires_at: now + ttlMs,
    }, etag);
  }

  async release(lease: Lease, ended?: RunEnd): Promise<void> {
    const etag = this.#etags.get(lease.id);
    if (etag === undefined) return;
    // Fails its condition when someone else holds it now: then it is not ours to release.
    await this.#write(lease.id, {
      holder: this.instance,
      token: lease.token,
      acquired_at: 0,
      expires_at: 0,
      released_at: this.now(),
      ...(ended ? { last_run: { ...ended, holder: this.instance, finished_at: this.now() } } : {}),
    }, etag);
    this.#etags.delete(lease.id);
  }

  /** Expires the lease another instance holds now; false when none does (or it just changed). */
  async expire(id: string): Promise<boolean> {
    const stored = await this.#read(id);
    if (!stored?.doc || stored.doc.expires_at <= this.now()) return false;
    if (stored.doc.holder === this.instance) return false;
    return await this.#write(id, { ...stored.doc, expires_at: 0 }, stored.etag);
  }

  /** The unexpired holder and the last run that released the lease, in one read. */
  async state(id: string): Promise<{ holder: LeaseHolder | null; lastRun: LastRun | null }> {
    const doc = (await this.#read(id))?.doc;
    return {
      holder: doc && doc.expires_at > this.now()
        ? { holder: doc.holder, expiresAt: doc.expires_at }
        : null,
      lastRun: doc?.last_run ?? null,
    };
  }

  async holder(id: string): Promise<LeaseHolder | null> {
    const stored = await this.#read(id);
    if (!stored?.doc || stored.doc.expires_at <= this.now()) return null;
    return { holder: stored.doc.holder, expiresAt: stored.doc.expires_at };
  }
}

/**
 * Boot check of the coordination bucket: a second `If-None-Match: *` write of one key must fail.
 * Throws, saying why, when the bucket is missing or the backend ignores the condition (leases
 * there would not keep two runners apart).
 */
export async function checkConditionalWrites(client: S3Client, bucket: string): Promise<void> {
  const key = `_svc/leases/.probe-${crypto.randomUUID()}`;
  const put = () =>
    client.send({
      method: "PUT",
      bucket,
      key,
      headers: { "if-none-match": "*" },
      body: "probe",
      idempotent: false,
    });
  await put();
  let honoured = false;
  try {
    await put();
  } catch (err) {
    if (!preconditionFailed(err)) throw err;
    honoured = true;
  } finally {
    await client.send({ method: "DELETE", bucket, key, idempotent: true }).catch(() => {});
  }
  if (!honoured) {
    throw new Error(
      `The backend of bucket "${bucket}" ignores If-None-Match on PUT: it cannot hold ` +
        "replication leases (advanced.config_sync_bucket)",
    );
  }
}
