/**
 * Which key encrypted the config database, kept beside it (`config.db.keycheck`: an HMAC of a
 * fixed text under the key, never the key). An encrypted database that does not open looks the
 * same to SQLite whether the key is wrong or the file is damaged (SQLITE_NOTADB both ways); the
 * check tells the two apart, so the operator is told the right story: "another password hash"
 * (the old one restores it) or "damaged" (nothing will open it; restore a backup).
 *
 * It reveals nothing the state directory does not already hold: the key is derived from the
 * bcrypt hash stored beside it.
 */
import { createHmac } from "node:crypto";
import { writePrivateFile } from "../lib/mod.ts";
import { DB_FILE } from "./db-files.ts";

export const KEY_CHECK_FILE = `${DB_FILE}.keycheck`;

/** Why a config database does not open with the current key. */
export type OpenFailure = "damaged" | "other_hash" | "unknown";

export function keyCheckOf(key: string): string {
  return createHmac("sha256", key).update("svc config database key check v1").digest("hex");
}

/** The stored check, or null when there is none (a database written before checks existed). */
export async function readKeyCheck(dir: string): Promise<string | null> {
  try {
    return (await Deno.readTextFile(`${dir}/${KEY_CHECK_FILE}`)).trim() || null;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

/** Records that `key` opens the database in `dir` (written only when it changed). */
export async function recordKeyCheck(dir: string, key: string): Promise<void> {
  const check = keyCheckOf(key);
  if (await readKeyCheck(dir) === check) return;
  await writePrivateFile(`${dir}/${KEY_CHECK_FILE}`, `${check}\n`);
}

/** What the stored check says about a database the current key does not open. */
export async function openFailureOf(dir: string, key: string): Promise<OpenFailure> {
  const stored = await readKeyCheck(dir);
  if (stored === null) return "unknown";
  return stored === keyCheckOf(key) ? "damaged" : "other_hash";
}
