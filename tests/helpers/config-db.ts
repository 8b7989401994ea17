/** Helpers for tests of the config database and what stores in it (src/db, src/admin). */
import { createClient } from "@libsql/client";
import { pathToFileURL } from "node:url";

/** True when the file's raw bytes contain `needle` (what `strings | grep` would find). */
export async function fileContains(path: string, needle: string): Promise<boolean> {
  const bytes = await Deno.readFile(path);
  const target = new TextEncoder().encode(needle);
  outer: for (let i = 0; i + target.length <= bytes.length; i++) {
    for (let j = 0; j < target.length; j++) if (bytes[i + j] !== target[j]) continue outer;
    return true;
  }
  return false;
}

/** Opens a file straight with libSQL (no svc code) and reads `sql`; throws as libSQL does. */
export async function rawQuery(
  path: string,
  key: string | undefined,
  sql: string,
): Promise<Record<string, unknown>[]> {
  const client = createClient({ url: pathToFileURL(path).href, encryptionKey: key });
  try {
    const result = await client.execute(sql);
    return result.rows.map((row) => ({ ...row }));
  } finally {
    client.close();
  }
}

/** The code of what `fn` throws (undefined when it does not throw). */
export async function thrownCode(fn: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await fn();
  } catch (err) {
    return (err as { code?: string }).code ?? "no code";
  }
  return undefined;
}

/** Two syntactically valid bcrypt hashes (cost 4), for tests that only need distinct keys. */
export const HASH_A = "$2b$04$r89e2Zn3Opk8eCtIcIHp4u2xZxbqIAQjmxbQXikiZbnRqrPqWzj3O"; // "a"
export const HASH_B = "$2b$04$oLbIcIjjx.HcZEpXs/4rFueJ038h9yUGvkk/XL0mq83vuj0gey.P6"; // "b"

/**
 * The output of `strings -a <path>` (binutils), or null when the tool is not installed (tests
 * then rely on fileContains alone).
 */
export async function stringsOf(path: string): Promise<string | null> {
  try {
    const output = await new Deno.Command("strings", { args: ["-a", "-n", "4", path] }).output();
    if (!output.success) throw new Error(`strings failed on ${path}`);
    return new TextDecoder().decode(output.stdout);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}
