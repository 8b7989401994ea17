import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { PartHashChain } from "./part-hash-chain.ts";

const sha256 = (...parts: Uint8Array[]) => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
};
const bytes = (text: string) => new TextEncoder().encode(text);

/** Part files in a temp directory; counts how often each path is asked for. */
function parts() {
  const dir = Deno.makeTempDirSync({ prefix: "hash-chain-" });
  const reads = new Map<number, number>();
  const files = {
    set(n: number, body: Uint8Array) {
      Deno.writeFileSync(`${dir}/${n}`, body);
      return files;
    },
    delete: (n: number) => Deno.removeSync(`${dir}/${n}`),
  };
  const open = (n: number) => {
    reads.set(n, (reads.get(n) ?? 0) + 1);
    return `${dir}/${n}`;
  };
  return { files, reads, open, [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }) };
}

Deno.test("hash chain: parts arriving out of order are hashed in order, each read once", async () => {
  using fixture = parts();
  const { files, reads, open } = fixture;
  const chain = new PartHashChain(open);
  const [a, b, c] = [bytes("alpha"), bytes("bravo"), bytes("charlie")];
  for (const [n, body] of [[3, c], [1, a], [2, b]] as const) {
    files.set(n, body);
    chain.stored(n, `e${n}`);
  }
  const list = [1, 2, 3].map((n) => ({ partNumber: n, etag: `e${n}` }));
  assert.equal(await chain.digest(list), sha256(a, b, c));
  assert.equal(chain.covered, 3);
  assert.deepEqual([...reads.values()], [1, 1, 1]);
});

Deno.test("hash chain: a replaced part rewinds; a list the chain does not cover is read", async () => {
  using fixture = parts();
  const { files, reads, open } = fixture;
  const chain = new PartHashChain(open);
  const [a, b, b2, c] = [bytes("a"), bytes("b"), bytes("B"), bytes("c")];
  files.set(1, a).set(2, b).set(3, c);
  chain.stored(1, "a");
  chain.stored(2, "b");
  chain.stored(3, "c");
  files.set(2, b2);
  chain.stored(2, "B");
  const list = [{ partNumber: 1, etag: "a" }, { partNumber: 2, etag: "B" }, {
    partNumber: 3,
    etag: "c",
  }];
  assert.equal(await chain.digest(list), sha256(a, b2, c));
  assert.equal(reads.get(1), 1, "part 1 was not read again");
  // Parts 1 and 3 only: the chain covers part 1, part 3 is read at completion.
  const before = reads.get(3)!;
  const skip = [{ partNumber: 1, etag: "a" }, { partNumber: 3, etag: "c" }];
  assert.equal(await chain.digest(skip), sha256(a, c));
  assert.equal(reads.get(3), before + 1);
});

Deno.test("hash chain: a chain that knows nothing (after a restart) reads every part", async () => {
  using fixture = parts();
  const { files, open } = fixture;
  files.set(1, bytes("x")).set(2, bytes("y"));
  const chain = new PartHashChain(open);
  const list = [{ partNumber: 1, etag: "x" }, { partNumber: 2, etag: "y" }];
  assert.equal(await chain.digest(list), sha256(bytes("x"), bytes("y")));
  files.delete(2);
  await assert.rejects(chain.digest(list), Deno.errors.NotFound);
});
