/**
 * The public facade: expansion and contraction run in a pooled worker, an abort ends it and
 * removes the partial output (the pool goes on with a new worker), a damaged token form is
 * refused, and the shutdown hook ends every worker.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gzipSync as zlibGzip } from "node:zlib";
import {
  archiveWorkerStats,
  contractArchive,
  expandArchive,
  shutdownArchiveWorkers,
} from "./archive-codec.ts";
import { sample } from "../../testing/archive-samples.ts";

const text = sample(1, 300_000);

Deno.test("the facade round trips a tgz exactly through its worker", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bytes = zlibGzip(text, { level: 9 });
    await Deno.writeFile(`${dir}/in`, bytes);
    const expanded = await expandArchive("gzip", `${dir}/in`, `${dir}/x`);
    assert.ok(expanded.ok && expanded.deflateStreams === 1);
    assert.equal(expanded.expandedSize, (await Deno.stat(`${dir}/x`)).size);
    const rebuilt = await contractArchive(`${dir}/x`, `${dir}/out`);
    assert.deepEqual(await Deno.readFile(`${dir}/out`), new Uint8Array(bytes));
    assert.equal(rebuilt.sha256, createHash("sha256").update(bytes).digest("hex"));
    // Not representable: answered, and no output left behind.
    const broken = new Uint8Array(bytes.subarray(0, 1000));
    await Deno.writeFile(`${dir}/broken`, broken);
    const refused = await expandArchive("gzip", `${dir}/broken`, `${dir}/y`);
    assert.ok(!refused.ok && /ends inside/.test(refused.reason), JSON.stringify(refused));
    await assert.rejects(Deno.stat(`${dir}/y`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an abort ends the work and removes the partial output", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Many copies of one member: ~100 MB to expand, far longer than the wait below, even with a
    // warm pooled worker on a loaded machine.
    const member = zlibGzip(sample(3, 2_000_000), { level: 6 });
    const copies = new Uint8Array(member.length * 48);
    for (let i = 0; i < 48; i++) copies.set(member, i * member.length);
    await Deno.writeFile(`${dir}/in`, copies);
    const controller = new AbortController();
    const pending = expandArchive("gzip", `${dir}/in`, `${dir}/x`, controller.signal);
    let settled = false;
    pending.then(() => settled = true, () => settled = true);
    // Abort once the worker is writing its output: the work itself is stopped, not its start.
    while (!settled) {
      const started = await Deno.stat(`${dir}/x`).then((info) => info.size > 0, () => false);
      if (started) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    controller.abort(new Error("stop"));
    await assert.rejects(pending, /stop/);
    await assert.rejects(Deno.stat(`${dir}/x`), Deno.errors.NotFound);
    const early = new AbortController();
    early.abort(new Error("before"));
    await assert.rejects(contractArchive(`${dir}/x`, `${dir}/y`, early.signal), /before/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a damaged token form is refused, not rebuilt wrong", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/in`, zlibGzip(text));
    const expanded = await expandArchive("gzip", `${dir}/in`, `${dir}/x`);
    assert.ok(expanded.ok);
    const form = await Deno.readFile(`${dir}/x`);
    form[form.length - 40] ^= 0x20; // inside the last literals or the END record
    await Deno.writeFile(`${dir}/x`, form);
    await assert.rejects(contractArchive(`${dir}/x`, `${dir}/out`), /Archive token form/);
    await assert.rejects(Deno.stat(`${dir}/out`), Deno.errors.NotFound);
    await assert.rejects(contractArchive(`${dir}/in`, `${dir}/out`), /not an archive token form/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pooled workers: reused between jobs; after an abort and a shutdown, jobs still run", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bytes = zlibGzip(text, { level: 6 });
    await Deno.writeFile(`${dir}/in`, bytes);
    await expandArchive("gzip", `${dir}/in`, `${dir}/x0`); // a worker exists now
    const before = archiveWorkerStats().started;
    for (let i = 1; i <= 4; i++) {
      const expanded = await expandArchive("gzip", `${dir}/in`, `${dir}/x${i}`);
      assert.ok(expanded.ok);
      await contractArchive(`${dir}/x${i}`, `${dir}/out${i}`);
    }
    assert.equal(archiveWorkerStats().started, before, "eight jobs in a row, no new worker");
    // More jobs at once than workers: they wait their turn, none is refused.
    const many = Array.from(
      { length: archiveWorkerStats().size * 3 },
      (_, i) => contractArchive(`${dir}/x1`, `${dir}/many${i}`),
    );
    for (const done of await Promise.all(many)) {
      assert.equal(done.sha256, createHash("sha256").update(bytes).digest("hex"));
    }
    assert.ok(archiveWorkerStats().alive <= archiveWorkerStats().size);

    // A long job (tens of MB), cut off once its worker is writing its output.
    const member = zlibGzip(sample(3, 2_000_000), { level: 6 });
    const copies = new Uint8Array(member.length * 48);
    for (let i = 0; i < 48; i++) copies.set(member, i * member.length);
    await Deno.writeFile(`${dir}/big`, copies);
    const writing = async (path: string) => {
      while (!(await Deno.stat(path).then((info) => info.size > 0, () => false))) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    // An aborted job's worker is dropped (its output removed); the next job gets a new one.
    const controller = new AbortController();
    const aborted = expandArchive("gzip", `${dir}/big`, `${dir}/cut`, controller.signal);
    await writing(`${dir}/cut`);
    controller.abort(new Error("cut"));
    await assert.rejects(aborted, /cut/);
    await assert.rejects(Deno.stat(`${dir}/cut`), Deno.errors.NotFound);
    assert.ok((await expandArchive("gzip", `${dir}/in`, `${dir}/after`)).ok);
    assert.ok(archiveWorkerStats().alive < archiveWorkerStats().size + 1);

    // The shutdown hook ends every worker and fails a running job; later jobs start anew.
    const running = expandArchive("gzip", `${dir}/big`, `${dir}/late`);
    await writing(`${dir}/late`);
    shutdownArchiveWorkers();
    await assert.rejects(running, /shut down/);
    await assert.rejects(Deno.stat(`${dir}/late`), Deno.errors.NotFound);
    assert.equal(archiveWorkerStats().alive, 0);
    assert.ok((await expandArchive("gzip", `${dir}/in`, `${dir}/again`)).ok);
  } finally {
    shutdownArchiveWorkers(); // no worker left for the test runner
    await Deno.remove(dir, { recursive: true });
  }
});
