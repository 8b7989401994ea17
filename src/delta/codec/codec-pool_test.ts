import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { CodecPool, defaultCodecConcurrency } from "./codec-pool.ts";
import { probeXdelta3, Xdelta3Codec } from "./codec.ts";

const isSlowDown = (err: unknown) => err instanceof SvcError && err.code === "SlowDown";

Deno.test("default concurrency is max(16, cpus * 4)", () => {
  assert.equal(defaultCodecConcurrency(), Math.max(16, navigator.hardwareConcurrency * 4));
  assert.ok(new CodecPool().concurrency >= 16);
  assert.throws(() => new CodecPool(0), RangeError);
});

Deno.test("tryAcquire: the N+1th gets SlowDown at once; release frees a slot", () => {
  const pool = new CodecPool(3);
  const permits = [pool.tryAcquire(), pool.tryAcquire(), pool.tryAcquire()];
  assert.equal(pool.available, 0);
  assert.throws(() => pool.tryAcquire(), isSlowDown);
  permits[0].release();
  permits[0].release(); // idempotent
  assert.equal(pool.available, 1);
  pool.tryAcquire();
  assert.equal(pool.inUse, 3);
});

Deno.test("acquire waits for a release, FIFO, and times out with SlowDown", async () => {
  const pool = new CodecPool(1);
  const held = pool.tryAcquire();
  const order: string[] = [];
  const a = pool.acquire(undefined, 1000).then((p) => (order.push("a"), p));
  const b = pool.acquire(undefined, 1000).then((p) => (order.push("b"), p));
  assert.equal(pool.waiting, 2);
  // A PUT cannot jump the queue.
  assert.throws(() => pool.tryAcquire(), isSlowDown);
  held.release();
  (await a).release();
  (await b).release();
  assert.deepEqual(order, ["a", "b"]);
  assert.equal(pool.available, 1);

  const again = pool.tryAcquire();
  const started = performance.now();
  await assert.rejects(pool.acquire(undefined, 50), isSlowDown);
  assert.ok(performance.now() - started >= 45);
  assert.equal(pool.waiting, 0);
  again.release();
  assert.equal(pool.available, 1);
});

Deno.test("acquire honours the caller's abort and leaves the queue", async () => {
  const pool = new CodecPool(1);
  const held = pool.tryAcquire();
  const controller = new AbortController();
  const waiting = pool.acquire(controller.signal, 10_000);
  const reason = new Error("client gone");
  controller.abort(reason);
  await assert.rejects(waiting, (err) => err === reason);
  assert.equal(pool.waiting, 0);
  held.release();
  assert.equal(pool.available, 1);
});

Deno.test("concurrency is settable at runtime: growing wakes waiters, shrinking drains", async () => {
  const pool = new CodecPool(1);
  const first = pool.tryAcquire();
  const waiting = pool.acquire(undefined, 1000);
  pool.concurrency = 2;
  const second = await waiting;
  assert.equal(pool.available, 0);
  pool.concurrency = 1;
  assert.equal(pool.available, 0);
  first.release();
  assert.equal(pool.available, 0, "still over the new limit");
  second.release();
  assert.equal(pool.available, 1);
});

Deno.test("run: times out with InternalError, aborts the work's signal, frees the slot after", async () => {
  const pool = new CodecPool(1);
  let seen: AbortSignal | undefined;
  let finish!: () => void;
  const workDone = new Promise<void>((r) => finish = r);
  await assert.rejects(
    pool.run((signal) => {
      seen = signal;
      signal.addEventListener("abort", () => setTimeout(finish, 20));
      return workDone;
    }, { timeoutMs: 30 }),
    (err) =>
      err instanceof SvcError && err.code === "InternalError" && /timed out/.test(err.message),
  );
  assert.equal(seen?.aborted, true);
  assert.equal(pool.available, 0, "slot held until the work really ended");
  await workDone;
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(pool.available, 1);
  assert.equal(await pool.run(() => Promise.resolve(7), { timeoutMs: 1000 }), 7);
  assert.equal(pool.available, 1);
});

Deno.test("run: no slot and no maxWaitMs is SlowDown; with maxWaitMs it waits", async () => {
  const pool = new CodecPool(1);
  const held = pool.tryAcquire();
  await assert.rejects(pool.run(() => Promise.resolve(1), { timeoutMs: 1000 }), isSlowDown);
  const waited = pool.run(() => Promise.resolve(2), { timeoutMs: 1000, maxWaitMs: 1000 });
  setTimeout(() => held.release(), 20);
  assert.equal(await waited, 2);
  assert.equal(pool.available, 1);
});

const probe = await probeXdelta3();

Deno.test({
  name: "run + xdelta3: a codec past its timeout is killed, cleaned up and fails cleanly",
  ignore: !probe.available,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "svc-pool-" });
    try {
      const refPath = `${dir}/ref-timeout.bin`;
      await Deno.writeFile(refPath, new Uint8Array(1 << 20).fill(7));
      const codec = new Xdelta3Codec({ tempDir: dir, acceptsA: probe.acceptsA });
      const endless = new ReadableStream<Uint8Array>({
        async pull(c) {
          await new Promise((r) => setTimeout(r, 5));
          c.enqueue(new Uint8Array(65536).fill(9));
        },
      });
      const pool = new CodecPool(2);
      const started = performance.now();
      await assert.rejects(
        pool.run((signal) => codec.encode(refPath, endless, { signal }), { timeoutMs: 300 }),
        (err) =>
          err instanceof SvcError && err.code === "InternalError" && /timed out/.test(err.message),
      );
      // The target never ends: only the timeout's kill can have ended the encode (generous
      // bound, so a loaded machine does not fail it).
      assert.ok(performance.now() - started < 10_000);
      // The kill and the cleanup finish after the rejection; a loaded machine needs a moment.
      const names = () => [...Deno.readDirSync(dir)].map((e) => e.name);
      for (let waited = 0; waited < 5000; waited += 50) {
        if (pool.available === 2 && names().length === 1) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(pool.available, 2);
      assert.deepEqual(names(), ["ref-timeout.bin"]);
      const pg = await new Deno.Command("pgrep", { args: ["-f", `xdelta3.*${refPath}`] }).output();
      assert.equal(new TextDecoder().decode(pg.stdout).trim(), "");

      // Decode through runStream: the slot is held while streaming and freed at the end.
      const target = new Uint8Array(1 << 20).fill(7);
      target.fill(1, 1000, 2000);
      const r = await pool.run(
        (signal) =>
          codec.encode(refPath, new Blob([target]).stream() as ReadableStream<Uint8Array>, {
            signal,
          }),
        { timeoutMs: 5000 },
      );
      assert.equal(r.aborted, false);
      if (r.aborted) return;
      const out = await pool.runStream(
        (signal) => codec.decode(refPath, Deno.openSync(r.deltaPath).readable, { signal }),
        { timeoutMs: 5000, maxWaitMs: 100 },
      );
      assert.equal(pool.available, 1);
      const bytes = new Uint8Array(await new Response(out).arrayBuffer());
      assert.deepEqual(bytes, target);
      assert.equal(pool.available, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
