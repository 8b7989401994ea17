/**
 * Directory fsync with group commit. A PUT is acknowledged only once the rename that made it
 * visible is durable, which takes an fsync of the directory holding the new name. Concurrent PUTs
 * into one directory can share that fsync: each caller waits for a sync that *started after* its
 * call (so after its rename), and every caller that arrived while a sync was running is served
 * by the one next sync. Under load that turns N directory fsyncs into about two, without ever
 * answering before the caller's own change is on disk.
 */
interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Callers waiting for the next sync, per directory; present while a sync loop runs. */
const pending = new Map<string, Waiter[]>();

/**
 * Resolves once an fsync of directory `path` that started after this call has completed.
 * A directory that does not exist (removed meanwhile) has nothing to make durable.
 */
export function syncDirectory(path: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const waiting = pending.get(path);
    if (waiting) {
      waiting.push({ resolve, reject });
      return;
    }
    pending.set(path, [{ resolve, reject }]);
    syncLoop(path);
  });
}

/** Syncs `path` until no caller waits: each round serves everyone who asked before it began. */
async function syncLoop(path: string): Promise<void> {
  for (;;) {
    const batch = pending.get(path)!;
    if (batch.length === 0) {
      pending.delete(path);
      return;
    }
    pending.set(path, []);
    try {
      await fsyncDirectoryNow(path);
      for (const waiter of batch) waiter.resolve();
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    }
  }
}

/** One fsync of a directory, now. */
export async function fsyncDirectoryNow(path: string): Promise<void> {
  let dir: Deno.FsFile;
  try {
    dir = await Deno.open(path, { read: true });
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return;
    throw err;
  }
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}
