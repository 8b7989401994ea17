/**
 * Atomically swaps two paths: Linux `renameat2(..., RENAME_EXCHANGE)`, which Deno has no op for.
 * Turning an object file into a directory (storage/fs/fs-nesting.ts) depends on the swap being
 * one step, so there is no fallback: where libc lacks renameat2 (glibc < 2.28) the swap refuses,
 * naming the symbol.
 */
import { cString } from "./c-path.ts";
import { errnoReader, type Libc, missingSymbolReason, processLibc } from "./libc.ts";

const RENAME_EXCHANGE = 2;
const AT_FDCWD = -100;

/** Swaps `a` and `b`; throws an error whose `code` is "ENOENT", "EINVAL" or `errno N`. */
export type PathExchange = (a: string, b: string) => void;

/** The swap through `libc`'s renameat2; one that refuses every call where libc lacks it. */
export function createPathExchange(libc: Libc): PathExchange {
  const renameat2 = libc.available ? libc.symbols.renameat2 : null;
  if (!libc.available || renameat2 === null) {
    const reason = missingSymbolReason(libc, "renameat2");
    return (a, b) => {
      throw Object.assign(
        new Error(`Swapping "${a}" and "${b}" needs renameat2: ${reason}`),
        { code: "ENOSYS" },
      );
    };
  }
  const errno = errnoReader(libc.symbols);
  return (a, b) => {
    const rc = renameat2(AT_FDCWD, cString(a), AT_FDCWD, cString(b), RENAME_EXCHANGE);
    if (rc === 0) return;
    const number = errno();
    const code = number === 2 ? "ENOENT" : number === 22 ? "EINVAL" : `errno ${number}`;
    throw Object.assign(new Error(`renameat2 exchange "${a}" ↔ "${b}" failed: ${code}`), {
      code,
    });
  };
}

/** The process's swap. */
export const exchangePaths: PathExchange = createPathExchange(processLibc);
