/**
 * Large files leave off the request's path. Unlinking a file frees its blocks inside the call
 * that drops its last name (the unlink of a DELETE, or the rename of a PUT that replaces it):
 * ~0.35 ms per MiB here (180 ms for 512 MiB with the `discard` mount option), which the client
 * waited out before its answer. A large file being replaced gets a second name in the temp
 * directory first (a hard link), a large file being deleted is moved there (a rename: the key
 * disappears atomically, as with an unlink), and that name is removed afterwards, beside the
 * next requests. A crash in between leaves the temp name, which the next start's sweep of the
 * temp directory removes (a link keeps the file's old mtime, so the sweep sees it as stale).
 */

import { getLogger } from "../../observability/mod.ts";
import { errorCode } from "./fs-calls.ts";

const log = getLogger("svc::storage");

/** Files smaller than this are freed inline: their unlink is cheaper than a second name. */
export const RETIRE_MIN_BYTES = 32 * 2 ** 20;

export class RetiredFiles {
  readonly #pending = new Set<Promise<void>>();
  /** Names handed to the background unlink so far. */
  released = 0;

  constructor(private readonly tmpDir: string) {}

  /**
   * A second name for the file at `path`, made before a rename replaces it; null when there is
   * no file to hold (gone, or on another filesystem than the temp directory: then it is freed
   * inline, as before).
   */
  async hold(path: string): Promise<string | null> {
    const name = this.#name();
    try {
      await Deno.link(path, name);
      return name;
    } catch (err) {
      if (isExpected(err)) return null;
      throw err;
    }
  }

  /**
   * Moves the file at `path` into the temp directory and removes it there later: true when it
   * was moved; false when it was already gone or cannot be moved (the caller unlinks it).
   */
  async take(path: string): Promise<boolean> {
    const name = this.#name();
    try {
      await Deno.rename(path, name);
    } catch (err) {
      if (isExpected(err)) return false;
      throw err;
    }
    this.release(name);
    return true;
  }

  /** Removes a held name (a file, or a directory with what it holds) in the background. */
  release(name: string): void {
    this.released++;
    const removal = Deno.remove(name, { recursive: true }).catch((err) => {
      if (errorCode(err) === "ENOENT") return;
      log.warn(`Removing the retired file "${name}" failed; the next start removes it`, {
        error: err instanceof Error ? err.message : String(err),
      });
    }).finally(() => this.#pending.delete(removal));
    this.#pending.add(removal);
  }

  /** Settles once every removal started so far has ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  #name(): string {
    return `${this.tmpDir}/${crypto.randomUUID()}.retired`;
  }
}

/** ENOENT: nothing to hold; EXDEV: the file lives on another filesystem than the temp directory. */
function isExpected(err: unknown): boolean {
  const code = errorCode(err);
  return code === "ENOENT" || code === "EXDEV";
}
