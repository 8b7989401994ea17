/**
 * A small file only svc's user may read (a password hash, a TLS key), written so a crash leaves
 * either the old file or the new one: temp (mode 0600) + fsync + rename + directory fsync.
 */
import { randomBytes } from "node:crypto";
import { fsyncDirectoryNow } from "./dir-sync.ts";

export async function writePrivateFile(path: string, text: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/")) || ".";
  const temp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
  const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o600 });
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
