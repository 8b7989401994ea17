/**
 * Writing the operator's config file after an apply: YAML of the document, through a temp file
 * in the same directory, fsync, rename, and a directory fsync, so a crash leaves either the old
 * file or the new one, never a torn one. A file the operator made read-only (no write bit) is
 * never replaced, even when svc runs as root: that is how an operator pins a config.
 */
import { dirname } from "node:path";
import { stringify } from "yaml";

/** Why the file could not be written (the caller reports it; nothing was changed). */
export class ConfigPersistError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigPersistError";
  }
}

export function documentYaml(document: Record<string, unknown>): string {
  return stringify(document, { lineWidth: 0 });
}

export async function writeConfigFile(
  path: string,
  document: Record<string, unknown>,
): Promise<void> {
  let mode = 0o600; // a new file may hold credentials
  try {
    const info = await Deno.stat(path);
    if (info.mode !== null) {
      if ((info.mode & 0o222) === 0) {
        throw new ConfigPersistError(`Config file "${path}" is read-only; nothing was changed`);
      }
      mode = info.mode & 0o777;
    }
  } catch (err) {
    if (err instanceof ConfigPersistError) throw err;
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new ConfigPersistError(
        `Cannot inspect config file "${path}": ${(err as Error).message}`,
      );
    }
  }
  const temp = `${path}.tmp-${crypto.randomUUID()}`;
  try {
    const file = await Deno.open(temp, { write: true, createNew: true, mode });
    try {
      await file.write(new TextEncoder().encode(documentYaml(document)));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.chmod(temp, mode);
    await Deno.rename(temp, path);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw new ConfigPersistError(`Cannot write config file "${path}": ${(err as Error).message}`);
  }
  try {
    const dir = await Deno.open(dirname(path), { read: true });
    try {
      await dir.sync();
    } finally {
      dir.close();
    }
  } catch {
    // The rename is done; a directory that cannot be opened for fsync (some filesystems) only
    // weakens durability across a power loss, it does not make the write wrong.
  }
}
