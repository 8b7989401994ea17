/**
 * Maintenance jobs running on other instances of a fleet, as this instance's jobs surface shows
 * and steers them: read from the gates the last watcher step listed (fleet-gate.ts), so a
 * listing costs no extra request. A remote job's id is `<its id>@<its instance>`
 * (`maintenance:3@host-1a2b3c4d`); its row is the one its holder wrote at its last heartbeat,
 * plus `held_by` (instance, heartbeat time). A cancel writes `cancel` into the gate (a
 * conditional write); the holder cancels at its next heartbeat.
 */
import { emptyProgress, type JobRecord, type JobStatus } from "../job-model.ts";
import type { GateDocument, StoredGate } from "./fleet-gate-docs.ts";

interface RemoteDocs {
  read(bucket: string): Promise<StoredGate | null>;
  replace(doc: GateDocument, etag: string): Promise<string | null>;
}

/** Phases after which a migration has moved its bucket: a cancel is refused there. */
const PAST_FLIP = new Set(["flip", "cleanup", "done"]);

export class FleetRemoteJobs {
  /** The gates of the last watcher step, by bucket. */
  protected seen = new Map<string, StoredGate>();

  constructor(private readonly remoteDocs: RemoteDocs, private readonly self: string) {}

  #others(): StoredGate[] {
    return [...this.seen.values()].filter((stored) => stored.doc.holder !== this.self);
  }

  #find(id: string): StoredGate | undefined {
    return this.#others().find((stored) => `${stored.doc.job}@${stored.doc.holder}` === id);
  }

  #row(doc: GateDocument): Record<string, unknown> {
    return {
      ...doc.row,
      id: `${doc.job}@${doc.holder}`,
      ...(doc.cancel && doc.row.status !== "cancelled" ? { status: "cancelling" } : {}),
      held_by: { instance: doc.holder, heartbeat_at: new Date(doc.heartbeat_at).toISOString() },
    };
  }

  /** Rows of the maintenance jobs other instances run now. */
  remoteRows(): Record<string, unknown>[] {
    return this.#others().map((stored) => this.#row(stored.doc));
  }

  remoteRow(id: string): Record<string, unknown> | null {
    const stored = this.#find(id);
    return stored ? this.#row(stored.doc) : null;
  }

  /** A remote job as a record the jobs routes can act on; null when none has that id. */
  remoteJob(id: string): JobRecord | null {
    const stored = this.#find(id);
    if (!stored) return null;
    const { doc } = stored;
    const row = this.#row(doc);
    const progress = (row.progress ?? emptyProgress("running")) as JobRecord["progress"];
    return {
      id,
      kind: "maintenance",
      type: doc.type,
      scope: { bucket: doc.bucket, prefix: "" },
      status: (row.status as JobStatus) ?? "running",
      paused: false,
      cancelRequested: Boolean(doc.cancel),
      progress,
      state: {},
      error: null,
      createdBy: String(row.created_by ?? ""),
      createdAt: doc.created_at,
      startedAt: null,
      finishedAt: null,
      updatedAt: doc.heartbeat_at,
    };
  }

  remoteJobOf(bucket: string): JobRecord | null {
    const stored = this.#others().find((candidate) => candidate.doc.bucket === bucket);
    return stored ? this.remoteJob(`${stored.doc.job}@${stored.doc.holder}`) : null;
  }

  isRemote(id: string): boolean {
    return id.includes("@");
  }

  /**
   * Asks the holder of remote job `id` to cancel it. A message when it cannot be (gone, or a
   * migration past its flip), else null.
   */
  async requestCancel(id: string, by: string): Promise<string | null> {
    const seen = this.#find(id);
    if (!seen) return `No job "${id}" runs in the fleet`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const stored = await this.remoteDocs.read(seen.doc.bucket);
      if (stored === null || `${stored.doc.job}@${stored.doc.holder}` !== id) {
        return `Job ${id} already ended`;
      }
      const phase = (stored.doc.row.progress as { phase?: string } | undefined)?.phase;
      if (stored.doc.flip || (stored.doc.type === "migrate" && PAST_FLIP.has(phase ?? ""))) {
        return `Job ${id} already moved bucket "${stored.doc.bucket}" to its new backend; ` +
          `it can no longer be cancelled`;
      }
      if (stored.doc.cancel) return null;
      const doc = { ...stored.doc, cancel: { by, at: Date.now() } };
      const etag = await this.remoteDocs.replace(doc, stored.etag);
      if (etag !== null) {
        this.seen.set(doc.bucket, { doc, etag });
        return null;
      }
    }
    return `Job ${id} changed while it was being cancelled; try again`;
  }
}
