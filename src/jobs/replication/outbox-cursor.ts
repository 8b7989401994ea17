/**
 * The replication event consumer's position in `event_outbox`: the last row id it applied,
 * in the config database's `meta` table (migration 6 created it at 0).
 */
import type { DbClient } from "../../db/mod.ts";

const KEY = "replication_outbox_cursor";

export class OutboxCursor {
  constructor(private readonly db: DbClient) {}

  async read(): Promise<number> {
    const result = await this.db.execute({
      sql: "SELECT value FROM meta WHERE key = ?",
      args: [KEY],
    });
    const value = Number(result.rows[0]?.value ?? 0);
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  }

  async write(id: number): Promise<void> {
    await this.db.execute({
      sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
      args: [KEY, String(id)],
    });
  }
}
