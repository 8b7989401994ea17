/**
 * The `bucket_usage` table (migration 6): the persisted per-bucket usage counters. The counter
 * itself lives in memory (src/objects/usage.ts); this store only loads it at start and takes the
 * batches src/objects/usage-flusher.ts writes, so no S3 write waits on the database.
 */
import type { DbClient } from "./config-db.ts";

/** One bucket's persisted counter. Times are Unix milliseconds. */
export interface UsageRow {
  bucket: string;
  objectCount: number;
  logicalBytes: number;
  storedBytes: number;
  lastScanAt: number;
}

export class UsageStore {
  readonly #db: DbClient;
  readonly #now: () => number;

  constructor(db: DbClient, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async loadAll(): Promise<UsageRow[]> {
    const result = await this.#db.execute(
      "SELECT bucket, object_count, logical_bytes, stored_bytes, last_scan_at FROM bucket_usage",
    );
    return result.rows.map((row) => ({
      bucket: String(row.bucket),
      objectCount: Number(row.object_count),
      logicalBytes: Number(row.logical_bytes),
      storedBytes: Number(row.stored_bytes),
      lastScanAt: Number(row.last_scan_at),
    }));
  }

  /** Writes the rows (insert or replace) and deletes `removed`, in one transaction. */
  async write(rows: readonly UsageRow[], removed: readonly string[] = []): Promise<void> {
    if (rows.length === 0 && removed.length === 0) return;
    const now = this.#now();
    await this.#db.batch([
      ...removed.map((bucket) => ({
        sql: "DELETE FROM bucket_usage WHERE bucket = ?",
        args: [bucket],
      })),
      ...rows.map((row) => ({
        sql: `INSERT INTO bucket_usage
                (bucket, object_count, logical_bytes, stored_bytes, last_scan_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (bucket) DO UPDATE SET
                object_count = excluded.object_count,
                logical_bytes = excluded.logical_bytes,
                stored_bytes = excluded.stored_bytes,
                last_scan_at = excluded.last_scan_at,
                updated_at = excluded.updated_at`,
        args: [row.bucket, row.objectCount, row.logicalBytes, row.storedBytes, row.lastScanAt, now],
      })),
    ], "write");
  }
}
