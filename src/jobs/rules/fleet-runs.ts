/**
 * Run history of replication and lifecycle rules shared by the instances of a fleet (a
 * coordination bucket, `advanced.config_sync_bucket`), so `GET /jobs/<id>/runs` on any instance
 * shows the runs wherever they ran. Leases move a rule's runs between instances; each keeps its
 * own runs in its config database (`job_runs`, the source of truth for its own) and, when a run
 * starts and when it ends, publishes its last `FLEET_RUNS_KEPT` runs of that rule as
 * `_svc/runs/<kind>/<name>/<instance>.json`. Each document has one writer, so no write needs a
 * condition. A reader merges its own rows with every other instance's document: newest first,
 * each run naming the instance that ran it (run ids are per instance, so a run is known by
 * instance and id). Failures and cursors stay per instance (see docs/ARCHITECTURE.md).
 */
import { BackendError, type S3Client } from "../../storage/mod.ts";
import type { RunRecord } from "../job-model.ts";
import { readDocument } from "./coordination.ts";

/** Runs of one rule each instance publishes. */
export const FLEET_RUNS_KEPT = 20;

export interface FleetRunsDocument {
  instance: string;
  job_id: string;
  updated_at: number;
  runs: RunRecord[];
}

/** The runs of one instance. */
export interface InstanceRuns {
  instance: string;
  runs: RunRecord[];
}

export function runsPrefix(id: string): string {
  const colon = id.indexOf(":");
  return `_svc/runs/${id.slice(0, colon)}/${encodeURIComponent(id.slice(colon + 1))}/`;
}

function isRun(value: unknown): value is RunRecord {
  const run = value as Partial<RunRecord> | null;
  return typeof run === "object" && run !== null &&
    (typeof run.id === "number" || typeof run.id === "string") &&
    typeof run.jobId === "string" && typeof run.status === "string" &&
    typeof run.startedAt === "number";
}

export function isRunsDocument(value: unknown): value is FleetRunsDocument {
  const doc = value as Partial<FleetRunsDocument> | null;
  return typeof doc === "object" && doc !== null && typeof doc.instance === "string" &&
    typeof doc.job_id === "string" && Array.isArray(doc.runs) && doc.runs.every(isRun);
}

/**
 * The runs of every instance, newest first (by start, then end), at most `limit`; a run listed
 * twice for one instance (its own rows and a stale document) counts once.
 */
export function mergeRuns(
  sources: InstanceRuns[],
  limit: number,
): { instance: string; run: RunRecord }[] {
  const seen = new Set<string>();
  const all: { instance: string; run: RunRecord }[] = [];
  for (const { instance, runs } of sources) {
    for (const run of runs) {
      const key = `${instance}\u0000${run.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      all.push({ instance, run });
    }
  }
  all.sort((a, b) =>
    b.run.startedAt - a.run.startedAt ||
    (b.run.finishedAt ?? Infinity) - (a.run.finishedAt ?? Infinity) ||
    a.instance.localeCompare(b.instance)
  );
  return all.slice(0, limit);
}

/** Keys of a ListObjectsV2 answer (the documents are few per rule). */
function listedKeys(xml: string): { keys: string[]; next?: string } {
  const decode = (text: string) =>
    text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'").replace(/&amp;/g, "&");
  const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => decode(m[1]));
  const next = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1];
  const truncated = /<IsTruncated>true<\/IsTruncated>/.test(xml);
  return { keys, next: truncated && next !== undefined ? decode(next) : undefined };
}

export class FleetRuns {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** This instance's id in the fleet (stable across restarts: its rows keep their name). */
    readonly instance: string,
    private readonly now: () => number = Date.now,
  ) {}

  #key(id: string, instance: string): string {
    return `${runsPrefix(id)}${encodeURIComponent(instance)}.json`;
  }

  /** Publishes this instance's last runs of rule `id` (newest first, as its store lists them). */
  async publish(id: string, runs: RunRecord[]): Promise<void> {
    const doc: FleetRunsDocument = {
      instance: this.instance,
      job_id: id,
      updated_at: this.now(),
      runs: runs.slice(0, FLEET_RUNS_KEPT),
    };
    await this.client.send({
      method: "PUT",
      bucket: this.bucket,
      key: this.#key(id, this.instance),
      headers: { "content-type": "application/json" },
      body: JSON.stringify(doc),
      idempotent: true,
    });
  }

  /** Drops this instance's document of rule `id` (the rule was deleted). */
  async forget(id: string): Promise<void> {
    try {
      await this.client.send({
        method: "DELETE",
        bucket: this.bucket,
        key: this.#key(id, this.instance),
        idempotent: true,
      });
    } catch (err) {
      if (!(err instanceof BackendError && err.status === 404)) throw err;
    }
  }

  /** The runs of rule `id` the other instances published (a damaged document is left out). */
  async others(id: string): Promise<InstanceRuns[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send({
        method: "GET",
        bucket: this.bucket,
        query: { "list-type": "2", prefix: runsPrefix(id), "continuation-token": token },
        idempotent: true,
      });
      const listed = listedKeys(page.text);
      keys.push(...listed.keys);
      token = listed.next;
    } while (token !== undefined);
    const own = this.#key(id, this.instance);
    const docs = await Promise.all(
      keys.filter((key) => key !== own).map(async (key) => {
        // Gone between the listing and the read, or damaged: left out.
        const parsed = (await readDocument(this.client, this.bucket, key))?.value;
        return isRunsDocument(parsed) && parsed.job_id === id ? parsed : null;
      }),
    );
    return docs.filter((doc): doc is FleetRunsDocument => doc !== null)
      .map((doc) => ({ instance: doc.instance, runs: doc.runs }));
  }
}
