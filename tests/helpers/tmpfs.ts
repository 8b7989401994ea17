/**
 * A small tmpfs for full-disk tests: mounted on a new directory where this process may mount
 * (root on Linux) and user xattrs work on it, else null so the test is skipped; and a filler that
 * writes until the filesystem refuses.
 */
import assert from "node:assert/strict";
import { setJsonXattr } from "../../src/native/xattr.ts";

async function run(cmd: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
}

/** A fresh tmpfs of `size` mounted on a new directory, or null where mounting is not allowed. */
export async function mountTmpfs(size: string, prefix = "svc-disk-full-"): Promise<string | null> {
  if (Deno.build.os !== "linux") return null;
  const dir = await Deno.makeTempDir({ prefix });
  if (!(await run("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]))) {
    await Deno.remove(dir);
    return null;
  }
  try {
    Deno.writeTextFileSync(`${dir}/.probe`, "x");
    setJsonXattr(`${dir}/.probe`, "user.svc.probe", { ok: true });
    Deno.removeSync(`${dir}/.probe`);
    return dir;
  } catch {
    await unmount(dir); // no user xattrs on this kernel's tmpfs
    return null;
  }
}

export async function unmount(dir: string): Promise<void> {
  await run("umount", [dir]);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/** Fills the filesystem of `path` in `chunkBytes` writes until one fails for lack of space. */
export function fill(path: string, chunkBytes = 64 * 1024): void {
  const file = Deno.openSync(path, { write: true, create: true });
  const chunk = new Uint8Array(chunkBytes);
  try {
    for (;;) file.writeSync(chunk);
  } catch (err) {
    assert.match(String(err), /No space left on device/);
  } finally {
    file.close();
  }
}
