/**
 * An exclusive advisory lock on a file, taken without waiting: `flock(LOCK_EX | LOCK_NB)` on a
 * descriptor svc keeps open for the life of the process. The kernel drops the lock when the
 * process ends, however it ends (kill -9 included), so a stale lock file never blocks a restart.
 * Deno's own `FsFile.lock` only waits; svc must refuse at once instead.
 *
 * The holder writes its pid into the file, so a refused second process can name it.
 */
import { cPath } from "./c-path.ts";
import { errnoReader, type Libc, missingSymbolReason, processLibc } from "./libc.ts";

const O_RDWR = 2;
const O_CREAT = 0o100;
const O_CLOEXEC = 0o2000000;
const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = 11;

export type FileLockResult =
  | { locked: true; release: () => void }
  | { locked: false; holderPid: number | null };

/** Locks `path` (created 0600 if absent) or reports who holds it; throws on any other failure. */
export function tryLockFile(path: string, libc: Libc = processLibc): FileLockResult {
  if (!libc.available) throw new Error(missingSymbolReason(libc, "flock"));
  const c = libc.symbols;
  const errno = errnoReader(c);
  const fd = c.open(cPath(path), O_RDWR | O_CREAT | O_CLOEXEC, 0o600);
  if (fd < 0) throw new Error(`Cannot open lock file "${path}": errno ${errno()}`);
  if (c.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    const code = errno();
    c.close(fd);
    if (code !== EWOULDBLOCK) throw new Error(`Cannot lock "${path}": errno ${code}`);
    return { locked: false, holderPid: holderOf(path) };
  }
  // The pid through a second descriptor: the lock belongs to `fd`, which stays open.
  Deno.writeTextFileSync(path, `${Deno.pid}\n`);
  let released = false;
  return {
    locked: true,
    release: () => {
      if (released) return;
      released = true;
      c.close(fd);
    },
  };
}

function holderOf(path: string): number | null {
  try {
    const pid = Number(Deno.readTextFileSync(path).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
