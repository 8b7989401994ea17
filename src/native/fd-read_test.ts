import assert from "node:assert/strict";
import { createFdRead, lstatNoThrow, withRegularFile } from "./fd-read.ts";
import { loadLibc, processLibc } from "./libc.ts";
import { setXattr } from "./xattr.ts";

const withoutStatx = processLibc.available
  ? { ...processLibc, symbols: { ...processLibc.symbols, statx: null } }
  : processLibc;
const missingLibc = loadLibc(["libc-svc-missing.so.6"]);

/**
 * The descriptors this process has open on `path`. Counting only those (not every descriptor)
 * keeps the check exact while the runtime opens and closes its own (timers, the test runner's
 * pipes, other tests' blocking-pool work) at the same time.
 */
function descriptorsOn(path: string): number {
  let count = 0;
  for (const entry of Deno.readDirSync("/proc/self/fd")) {
    try {
      if (Deno.readLinkSync(`/proc/self/fd/${entry.name}`) === path) count++;
    } catch {
      // closed between the listing and the read: not on `path`
    }
  }
  return count;
}

const text = new TextDecoder();

Deno.test("withRegularFile reads size, attribute and exact byte ranges from one descriptor", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/object`;
    const bytes = crypto.getRandomValues(new Uint8Array(5000));
    await Deno.writeFile(path, bytes);
    setXattr(path, "user.test.meta", new TextEncoder().encode('{"a":1}'));
    const got = withRegularFile(path, (file) => ({
      size: file.size,
      meta: text.decode(file.attribute("user.test.meta")!),
      missing: file.attribute("user.test.none"),
      whole: file.read(0, file.size),
      middle: file.read(1000, 3),
      empty: file.read(0, 0),
    }));
    assert.deepEqual(got?.size, 5000);
    assert.deepEqual(got?.meta, '{"a":1}');
    assert.deepEqual(got?.missing, null);
    assert.deepEqual(got?.whole, bytes);
    assert.deepEqual(got?.middle, bytes.subarray(1000, 1003));
    assert.deepEqual(got?.empty.length, 0);
    // Past the end is an error, never a short answer.
    assert.throws(() => withRegularFile(path, (file) => file.read(4999, 2)), /ended/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("withRegularFile reads an attribute larger than its first buffer where the filesystem allows one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/object`;
    await Deno.writeFile(path, new Uint8Array(1));
    // ext4 with 4 KiB blocks holds at most ~4 KiB per attribute (ENOSPC above); xfs and tmpfs
    // hold 64 KiB. The largest value this filesystem takes is read back whole.
    for (const length of [20_000, 3_900]) {
      const value = "x".repeat(length);
      try {
        setXattr(path, "user.test.meta", new TextEncoder().encode(value));
      } catch {
        continue;
      }
      assert.deepEqual(
        withRegularFile(path, (file) => text.decode(file.attribute("user.test.meta")!)),
        value,
      );
      return;
    }
    throw new Error("No attribute could be set");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("withRegularFile answers null (never blocks, never throws) for what is no regular file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/file`, new Uint8Array(3));
    await Deno.mkdir(`${dir}/directory`);
    await Deno.symlink(`${dir}/file`, `${dir}/link`);
    const fifo = await new Deno.Command("mkfifo", { args: [`${dir}/fifo`] }).output();
    let called = 0;
    const use = () => ++called;
    assert.deepEqual(withRegularFile(`${dir}/absent`, use), null);
    assert.deepEqual(withRegularFile(`${dir}/file/below-a-file`, use), null);
    assert.deepEqual(withRegularFile(`${dir}/directory`, use), null);
    assert.deepEqual(withRegularFile(`${dir}/link`, use), null);
    if (fifo.success) assert.deepEqual(withRegularFile(`${dir}/fifo`, use), null);
    assert.deepEqual(called, 0);
    assert.deepEqual(withRegularFile(`${dir}/file`, use), 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("withRegularFile closes the descriptor when its callback throws", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/file`;
    await Deno.writeFile(path, new Uint8Array(3));
    assert.equal(withRegularFile(path, () => descriptorsOn(path)), 1, "open inside the callback");
    for (let i = 0; i < 50; i++) {
      assert.throws(
        () =>
          withRegularFile(path, () => {
            throw new Error("refused");
          }),
        Error,
        "refused",
      );
    }
    assert.equal(descriptorsOn(path), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (
  const [through, lstat] of [
    ["statx", lstatNoThrow],
    ["Deno, libc without statx", createFdRead(withoutStatx).lstatNoThrow],
    ["Deno, no libc", createFdRead(missingLibc).lstatNoThrow],
  ] as const
) {
  Deno.test(`lstatNoThrow matches Deno.lstatSync, and answers null for a missing path (${through})`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeFile(`${dir}/file`, new Uint8Array(1234));
      await Deno.mkdir(`${dir}/directory`);
      await Deno.symlink(`${dir}/file`, `${dir}/link`);
      for (const name of ["file", "directory", "link"]) {
        const expected = Deno.lstatSync(`${dir}/${name}`);
        const got = lstat(`${dir}/${name}`);
        assert.deepEqual(got, {
          isFile: expected.isFile,
          isDirectory: expected.isDirectory,
          size: expected.size,
          ino: expected.ino,
        });
      }
      assert.equal(lstat(`${dir}/link`)?.isFile, false); // the link itself, not followed
      assert.equal(lstat(`${dir}/absent`), null);
      assert.equal(lstat(`${dir}/file/below-a-file`), null);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("without libc or its statx no descriptor read is served: the caller takes its general path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/file`, new Uint8Array(3));
    let called = 0;
    for (const libc of [withoutStatx, missingLibc]) {
      assert.equal(createFdRead(libc).withRegularFile(`${dir}/file`, () => ++called), null);
    }
    assert.equal(called, 0);
    assert.equal(createFdRead(processLibc).withRegularFile(`${dir}/file`, (file) => file.size), 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
