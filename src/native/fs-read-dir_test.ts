/**
 * The getdents64 reader answers exactly what Deno.readDirSync does: every name (ASCII or not,
 * across many buffer-fulls), each entry's type, and the same absent-path errors; so does its
 * fallback where libc has no getdents64, or there is no libc.
 */
import assert from "node:assert/strict";
import {
  createDirectoryReader,
  type DirectoryReader,
  ENTRY_DIRECTORY,
  ENTRY_FILE,
  ENTRY_OTHER,
  readDirectoryEntries,
} from "./fs-read-dir.ts";
import { loadLibc, processLibc } from "./libc.ts";

const withoutGetdents = processLibc.available
  ? { ...processLibc, symbols: { ...processLibc.symbols, getdents64: null } }
  : processLibc;

const readers: [string, DirectoryReader][] = [
  ["getdents64", readDirectoryEntries],
  ["Deno, libc without getdents64", createDirectoryReader(withoutGetdents)],
  ["Deno, no libc", createDirectoryReader(loadLibc(["libc-svc-missing.so.6"]))],
];

function read(path: string, reader = readDirectoryEntries): Map<string, number> {
  const entries = new Map<string, number>();
  reader(path, (name, type) => {
    assert.ok(!entries.has(name), `"${name}" reported twice`);
    entries.set(name, type);
  });
  return entries;
}

function withDir(test: (dir: string) => void) {
  return () => {
    const dir = Deno.makeTempDirSync({ prefix: "svc-read-dir-" });
    try {
      test(dir);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  };
}

for (const [through, reader] of readers) {
  Deno.test(
    `every entry with its type, never . or .. (${through})`,
    withDir((dir) => {
      Deno.writeFileSync(`${dir}/file.txt`, new Uint8Array(3));
      Deno.writeFileSync(`${dir}/.hidden`, new Uint8Array());
      Deno.writeFileSync(`${dir}/..x`, new Uint8Array());
      Deno.mkdirSync(`${dir}/sub`);
      Deno.symlinkSync(`${dir}/file.txt`, `${dir}/link`);
      Deno.writeFileSync(`${dir}/é日本-\u{1F600}`, new Uint8Array());
      assert.deepEqual(
        read(dir, reader),
        new Map([
          ["file.txt", ENTRY_FILE],
          [".hidden", ENTRY_FILE],
          ["..x", ENTRY_FILE],
          ["sub", ENTRY_DIRECTORY],
          ["link", ENTRY_OTHER],
          ["é日本-\u{1F600}", ENTRY_FILE],
        ]),
      );
      assert.deepEqual(read(`${dir}/sub`, reader), new Map());
    }),
  );

  Deno.test(
    `an absent path or a file is ENOENT or ENOTDIR, like Deno's errors (${through})`,
    withDir((dir) => {
      Deno.writeFileSync(`${dir}/file`, new Uint8Array());
      const codeOf = (path: string) => {
        try {
          reader(path, () => {});
        } catch (err) {
          return (err as { code?: string }).code;
        }
        return "no error";
      };
      assert.equal(codeOf(`${dir}/missing`), "ENOENT");
      assert.equal(codeOf(`${dir}/file`), "ENOTDIR");
      assert.equal(codeOf(`${dir}/file/below`), "ENOTDIR");
    }),
  );
}

Deno.test(
  "a directory larger than one buffer-full, mixed names, matches Deno.readDirSync (every reader)",
  withDir((dir) => {
    // ~40 bytes a record: 20,000 of them span several 256 KiB reads.
    for (let i = 0; i < 20_000; i++) {
      const name = i % 7 === 0 ? `ünïcode-${i}-名前` : `plain-name-number-${i}`;
      if (i % 11 === 0) Deno.mkdirSync(`${dir}/${name}`);
      else Deno.writeFileSync(`${dir}/${name}`, new Uint8Array());
    }
    const expected = new Map<string, number>();
    for (const entry of Deno.readDirSync(dir)) {
      expected.set(entry.name, entry.isDirectory ? ENTRY_DIRECTORY : ENTRY_FILE);
    }
    assert.equal(expected.size, 20_000);
    for (const [through, reader] of readers) {
      assert.deepEqual(read(dir, reader), expected, through);
    }
  }),
);
