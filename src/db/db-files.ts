/**
 * The files of the config database and the moves made on them. SQLite keeps companions next to
 * the main file (`-journal` for a transaction cut short, `-wal`/`-shm` in WAL mode) and finds
 * them by name, so a database is always moved together with its companions: leaving a hot
 * journal behind would let SQLite "roll back" a different database with it.
 *
 * Layout in the state directory:
 *   config.db                      the database (0600)
 *   config.db.rekey                a re-encrypted copy while the password changes
 *   config.db.mismatch-<time>      a database the current hash could not open (never deleted)
 */
import { fsyncDirectoryNow, pathExists } from "../lib/mod.ts";

export const DB_FILE = "config.db";
export const REKEY_FILE = `${DB_FILE}.rekey`;
export const MISMATCH_PREFIX = `${DB_FILE}.mismatch-`;
/** SQLite's companion files, named `<db><suffix>`. */
export const COMPANION_SUFFIXES = ["-journal", "-wal", "-shm"] as const;

/** Whether a file is there (see storage/path-exists.ts). */
export const exists = pathExists;

/** Renames a database and its companions (those present). */
export async function moveDatabase(from: string, to: string): Promise<void> {
  for (const suffix of COMPANION_SUFFIXES) {
    if (await exists(from + suffix)) await Deno.rename(from + suffix, to + suffix);
    else if (await exists(to + suffix)) await Deno.remove(to + suffix);
  }
  await Deno.rename(from, to);
}

/** Same as moveDatabase without awaiting (used where nothing may interleave). */
export function moveDatabaseSync(from: string, to: string): void {
  for (const suffix of COMPANION_SUFFIXES) {
    if (existsSync(from + suffix)) Deno.renameSync(from + suffix, to + suffix);
    else if (existsSync(to + suffix)) Deno.removeSync(to + suffix);
  }
  Deno.renameSync(from, to);
}

function existsSync(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** Removes a database and its companions (only for copies that were never committed). */
export async function removeDatabase(path: string): Promise<void> {
  for (const suffix of ["", ...COMPANION_SUFFIXES]) {
    try {
      await Deno.remove(path + suffix);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
}

/** `20261124T132500123Z`: sortable, no characters a shell or SQLite URI treats specially. */
export function fileTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, "");
}

/** Moves `<dir>/config.db` aside under a name no other file has; returns the new path. */
export async function moveAside(dir: string, now: number): Promise<string> {
  const base = `${dir}/${MISMATCH_PREFIX}${fileTimestamp(now)}`;
  let target = base;
  for (let n = 1; await exists(target); n++) target = `${base}-${n}`;
  await moveDatabase(`${dir}/${DB_FILE}`, target);
  await fsyncDirectoryNow(dir);
  return target;
}

/** The moved-aside databases of a directory, newest first. */
export async function listAside(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.startsWith(MISMATCH_PREFIX)) continue;
    if (COMPANION_SUFFIXES.some((suffix) => entry.name.endsWith(suffix))) continue;
    names.push(entry.name);
  }
  // The timestamp sorts lexically; a `-n` suffix marks a later move in the same millisecond.
  const order = (name: string) => {
    const [stamp, n = "0"] = name.slice(MISMATCH_PREFIX.length).split("-");
    return `${stamp}-${n.padStart(8, "0")}`;
  };
  names.sort((a, b) => order(b).localeCompare(order(a)));
  return names.map((name) => `${dir}/${name}`);
}

/** fsync of one file's contents. */
export async function fsyncFile(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true, write: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}

/**
 * A SQLite URI naming `path` with its encryption key, for statements that take a file name
 * (`VACUUM INTO`). `%`, `?` and `#` in the path are escaped as the URI grammar requires.
 */
export function keyedFileUri(path: string, key: string): string {
  const escaped = path.replace(/[%?#]/g, (ch) => `%${ch.charCodeAt(0).toString(16)}`);
  return `file:${escaped}?key=${encodeURIComponent(key)}`;
}
