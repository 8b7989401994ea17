/**
 * A small file only svc's user may read (a password hash, a TLS key), written so a crash leaves
 * either the old file or the new one: temp (mode 0600) + fsync + rename + directory fsync.
 */
import { randomBytes } from "node:crypto";
import { fsyncDirectoryNow } from "./dir-sync.ts";

/** Mode of svc's own files under its state directory: its user's alone. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of svc's own folders under its state directory. */
export const PRIVATE_DIR_MODE = 0o700;

export async function writePrivateFile(path: string, text: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/")) || ".";
  const temp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
  const file = await Deno.open(temp, { write: true, createNew: true, mode: PRIVATE_FILE_MODE });
  try {
    await file.write(new TextEncoder().encode(text));
    await file.sync();
  } finally {
    file.close();
  }
  try {
    await Deno.rename(temp, path);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw err;
  }
  await fsyncDirectoryNow(dir);
}

/** The temp name writePrivateFile gives a file while writing it. */
const INTERRUPTED_WRITE = /\.tmp-[0-9a-f]{12}$/;

/**
 * Removes what writes a crash interrupted left in `dir` (temps of writePrivateFile: e.g. the hash
 * of a bootstrap password whose change never committed); returns their names. A missing `dir` has
 * none.
 */
export async function removeInterruptedWrites(dir: string): Promise<string[]> {
  const removed: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !INTERRUPTED_WRITE.test(entry.name)) continue;
      await Deno.remove(`${dir}/${entry.name}`);
      removed.push(entry.name);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return removed.sort();
}

/**
 * Creates a folder of svc's own state (and missing parents) readable by svc's user alone, and
 * narrows one that already exists: state directories made by an older svc were 0755. Parts in
 * flight, spools and caches hold object bytes (plaintext for unencrypted backends), the database
 * holds credentials; a 0700 folder keeps them from other local users whatever the files' modes.
 * A folder svc may not chmod (another owner) is left as its owner set it.
 */
export async function privateDir(path: string): Promise<void> {
  await Deno.mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  await Deno.chmod(path, PRIVATE_DIR_MODE).catch((err) => {
    if (!(err instanceof Deno.errors.PermissionDenied)) throw err;
  });
}
