/**
 * Streams copied rather than rebuilt (stream-memo.ts): the members a new version shares with its
 * baseline come from the baseline archive, the changed ones from the model, and the result is the
 * new version exactly; a memo that points at the wrong bytes fails the rebuild, never yields them.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { sample } from "../../testing/archive-samples.ts";
import { isFormatProblem } from "./byte-io.ts";
import { contractFile, expandFile } from "./token-files.ts";

/** A gzip of several members (like a zip's, each compressed alone) at zlib's level 9. */
function members(parts: Uint8Array[]): Uint8Array {
  const gz = parts.map((part) => new Uint8Array(gzipSync(part, { level: 9 })));
  const out = new Uint8Array(gz.reduce((n, g) => n + g.length, 0));
  let at = 0;
  for (const g of gz) out.set(g, (at += g.length) - g.length);
  return out;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

Deno.test("a rebuild copies the members its baseline has and models the others, exactly", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const parts = [1, 2, 3, 4, 5, 6].map((seed) => sample(seed, 60_000));
    const baseline = members(parts);
    const changed = parts.slice();
    changed[3] = sample(99, 60_000);
    const next = members(changed);
    await Deno.writeFile(`${dir}/base.gz`, baseline);
    await Deno.writeFile(`${dir}/next.gz`, next);
    // One stream (a .tgz) is never remembered: its records are not even digested.
    await Deno.writeFile(`${dir}/one.gz`, members(parts.slice(0, 1)));
    const one = await expandFile("gzip", `${dir}/one.gz`, `${dir}/one.form`);
    assert.ok(one.ok && one.streams === undefined, JSON.stringify(one));
    const base = await expandFile("gzip", `${dir}/base.gz`, `${dir}/base.form`);
    assert.ok(base.ok && base.streams, JSON.stringify(base));
    assert.equal(base.streams.length, 6, "every member predicted");
    const expanded = await expandFile("gzip", `${dir}/next.gz`, `${dir}/next.form`);
    assert.ok(expanded.ok);

    const memo = { archivePath: `${dir}/base.gz`, streams: base.streams };
    const rebuilt = await contractFile(`${dir}/next.form`, `${dir}/out`, memo);
    assert.equal(rebuilt.copied, 5, "the five members the versions share");
    assert.equal(rebuilt.sha256, sha256(next));
    assert.deepEqual(await Deno.readFile(`${dir}/out`), next);

    // Without a memo, or with one that knows none of its records, every member is modelled.
    const plain = await contractFile(`${dir}/next.form`, `${dir}/out`);
    assert.deepEqual([plain.copied, plain.sha256], [0, sha256(next)]);
    const unknown = {
      ...memo,
      streams: memo.streams.map((s) => ({ ...s, digest: "0".repeat(64) })),
    };
    assert.equal((await contractFile(`${dir}/next.form`, `${dir}/out`, unknown)).copied, 0);

    // A memo pointing one byte off: the rebuilt bytes differ and the contraction fails.
    const off = { ...memo, streams: memo.streams.map((s) => ({ ...s, offset: s.offset + 1 })) };
    await assert.rejects(contractFile(`${dir}/next.form`, `${dir}/out`, off), isFormatProblem);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
