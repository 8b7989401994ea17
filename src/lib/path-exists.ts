/**
 * Whether something is at `path` (a dangling link counts: it is there to be replaced or
 * reported). Only "not found" is false; any other error (permissions, I/O) is thrown, never read
 * as absence.
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
