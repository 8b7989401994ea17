import assert from "node:assert/strict";
import { tryLockFile } from "./file-lock.ts";
import { loadLibc } from "./libc.ts";

Deno.test("a file lock is exclusive across processes and names its holder", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.lock`;
  try {
    const held = tryLockFile(path);
    assert.ok(held.locked);
    assert.equal(Deno.readTextFileSync(path), `${Deno.pid}\n`);
    assert.equal((Deno.statSync(path).mode ?? 0) & 0o777, 0o600);
    // Another process (flock locks belong to open files: a second process is the real case).
    const other = async () => {
      const script = `import { tryLockFile } from "${new URL("./file-lock.ts", import.meta.url)}";
        const r = tryLockFile(${JSON.stringify(path)});
        console.log(JSON.stringify(r.locked ? "locked" : r.holderPid));`;
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["eval", "--ext=ts", script],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      return JSON.parse(new TextDecoder().decode(out.stdout));
    };
    assert.equal(await other(), Deno.pid);
    held.release();
    assert.equal(await other(), "locked");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("without libc the lock refuses, naming the library", () => {
  assert.throws(() => tryLockFile("/tmp/never.lock", loadLibc(["libc-absent.so.9"])), /libc/);
});
