import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import type { EncodeResult } from "./codec.ts";
import { probeZstd, windowLog, ZstdCodec } from "./zstd-codec.ts";

const probe = await probeZstd();
const ignore = !probe.available;
if (ignore) console.warn("skipping zstd codec tests: no zstd >= 1.4.5");

/** Deterministic fast PRNG (xorshift32) so inputs cost nothing to make. */
function fillRandom(buf: Uint8Array, seed: number): void {
  let x = seed >>> 0 || 1;
  for (let i = 0; i < buf.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf[i] = x & 0xff;
  }
}

/** Changes `runs` 1 KiB runs of `buf` at pseudo-random places. */
function mutate(buf: Uint8Array, runs: number, seed: number): void {
  let x = seed;
  for (let r = 0; r < runs; r++) {
    x = (x * 1103515245 + 12345) >>> 0;
    const at = x % (buf.length - 1024);
    fillRandom(buf.subarray(at, at + 1024), x ^ 0x9e3779b9);
  }
}

function streamOf(bytes: Uint8Array, chunk = 64 * 1024): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunk));
      offset += chunk;
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-zstd-codec-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Names in `dir` the codec created (deltas and spooled targets). */
async function tempFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.name.endsWith(".delta") || e.name.endsWith(".target")) names.push(e.name);
  }
  return names;
}

/** Running zstd processes whose command line mentions `needle` (a unique temp path). */
async function zstdProcesses(needle: string): Promise<number> {
  const out = await new Deno.Command("pgrep", { args: ["-f", `zstd.*${needle}`] }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim()).length;
}

function assertDelta(r: EncodeResult): asserts r is Extract<EncodeResult, { aborted: false }> {
  assert.equal(r.aborted, false);
}

async function pair(dir: string, size: number, seed: number) {
  const reference = new Uint8Array(size);
  fillRandom(reference, seed);
  const target = reference.slice();
  mutate(target, 8, seed * 7);
  const refPath = `${dir}/ref-${seed}.bin`;
  await Deno.writeFile(refPath, reference);
  return { reference, target, refPath };
}

Deno.test("the window covers the larger of baseline and target, within zstd's limits", () => {
  assert.equal(windowLog(0), 10);
  assert.equal(windowLog(1 << 20), 21);
  assert.equal(windowLog((1 << 20) - 1), 20);
  assert.equal(windowLog(110 << 20, 120 << 20), 27);
  assert.equal(windowLog(1 << 20, 300 << 20), 29);
  assert.equal(windowLog(2 ** 31 - 1), 31);
  assert.equal(windowLog(2 ** 40), 31);
});

Deno.test({
  name: "pairs round-trip byte-identically, streamed (targetBytes) or spooled, both decoders",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      for (const [seed, known] of [[1, true], [2, false]] as const) {
        const { target, refPath } = await pair(dir, 1 << 20, seed);
        const r = await codec.encode(refPath, streamOf(target), {
          targetBytes: known ? target.length : undefined,
        });
        assertDelta(r);
        assert.equal((await Deno.stat(r.deltaPath)).size, r.deltaBytes);
        assert.ok(r.deltaBytes < target.length / 20, `delta ${r.deltaBytes} B too large`);
        const decoded = await collect(
          codec.decode(refPath, (await Deno.open(r.deltaPath)).readable, {}),
        );
        assert.deepEqual(decoded, target);
        const out = `${dir}/rebuilt-${seed}`;
        await Deno.writeFile(out, new Uint8Array(5)); // overwritten, not appended to
        await codec.decodeToFile(refPath, (await Deno.open(r.deltaPath)).readable, out, {});
        assert.deepEqual(await Deno.readFile(out), target);
        await Deno.remove(r.deltaPath);
      }
      assert.deepEqual(await tempFiles(dir), []);
    }),
});

Deno.test({
  name: "a target far from the baseline still matches content moved by more than 8 MiB",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      // The target is the baseline's second half followed by its first: every byte has a match,
      // but 12 MiB away, past zstd's default window unless the codec widens it.
      const { reference, refPath } = await pair(dir, 24 << 20, 5);
      const target = new Uint8Array(reference.length);
      target.set(reference.subarray(12 << 20), 0);
      target.set(reference.subarray(0, 12 << 20), 12 << 20);
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      const r = await codec.encode(refPath, streamOf(target), { targetBytes: target.length });
      assertDelta(r);
      assert.ok(r.deltaBytes < 64 * 1024, `delta ${r.deltaBytes} B: the move was not found`);
      const decoded = await collect(
        codec.decode(refPath, (await Deno.open(r.deltaPath)).readable, {}),
      );
      assert.deepEqual(decoded, target);
    }),
});

Deno.test({
  name: "dissimilar data past maxDeltaBytes aborts before reading it all, no temp file left",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const { refPath } = await pair(dir, 4 << 20, 10);
      const target = new Uint8Array(32 << 20);
      fillRandom(target, 11);
      let pulled = 0;
      const counted = streamOf(target).pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            pulled += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
      );
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      const r = await codec.encode(refPath, counted, {
        maxDeltaBytes: 64 * 1024,
        targetBytes: target.length,
      });
      assert.deepEqual(r, { aborted: true });
      assert.ok(pulled < target.length, `the encoder read all ${pulled} bytes before aborting`);
      assert.deepEqual(await tempFiles(dir), []);
      assert.equal(await zstdProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "a corrupt delta, a delta on the wrong baseline and a short target are InternalErrors",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      const { target, refPath } = await pair(dir, 300_000, 3);
      const garbage = new TextEncoder().encode("this is not a zstd frame at all");
      await assert.rejects(collect(codec.decode(refPath, streamOf(garbage), {})), (err) => {
        assert.ok(err instanceof SvcError);
        assert.equal(err.code, "InternalError");
        assert.match(err.message, /^Delta codec failed: exit \d+: .+/s);
        return true;
      });
      const r = await codec.encode(refPath, streamOf(target), {});
      assertDelta(r);
      const other = await pair(dir, 300_000, 4);
      await assert.rejects(
        codec.decodeToFile(other.refPath, (await Deno.open(r.deltaPath)).readable, `${dir}/o`, {}),
        (err) => err instanceof SvcError && err.code === "InternalError",
      );
      // A stream that ends before the announced length is not taken as the whole target.
      await assert.rejects(
        codec.encode(refPath, streamOf(target.subarray(0, 1000)), { targetBytes: target.length }),
        (err) => err instanceof SvcError && err.code === "InternalError",
      );
      assert.equal(await zstdProcesses(refPath), 0);
    }),
});

/** A target that trickles 64 KiB every 5 ms and never ends on its own. */
function trickle(source: Uint8Array, onCancel: () => void): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      await new Promise((r) => setTimeout(r, 5));
      const at = sent % (source.length - 65536);
      controller.enqueue(source.slice(at, at + 65536));
      sent += 65536;
    },
    cancel: onCancel,
  });
}

Deno.test({
  name: "aborting mid-encode kills zstd (or stops the spool), removes temp files, rejects",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      const { reference, refPath } = await pair(dir, 1 << 20, 8);
      for (const streamed of [true, false]) {
        let cancelled = false;
        const controller = new AbortController();
        const encoding = codec.encode(refPath, trickle(reference, () => cancelled = true), {
          signal: controller.signal,
          targetBytes: streamed ? 1 << 30 : undefined,
        });
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(await zstdProcesses(refPath), streamed ? 1 : 0);
        assert.equal((await tempFiles(dir)).length, 1);
        controller.abort(new Error("client went away"));
        await assert.rejects(encoding, (err) => {
          assert.ok(err instanceof SvcError && err.code === "InternalError");
          assert.match(err.message, /aborted \(client went away\)/);
          return true;
        });
        assert.equal(cancelled, true);
        assert.deepEqual(await tempFiles(dir), []);
        assert.equal(await zstdProcesses(refPath), 0);
      }
    }),
});

Deno.test({
  name: "an already-aborted signal never starts a process; decode abort errors the stream",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = new ZstdCodec({ tempDir: dir, level: 3 });
      const { reference, refPath } = await pair(dir, 300_000, 9);
      const reason = new SvcError("InternalError", "Delta codec failed: timed out");
      await assert.rejects(
        codec.encode(refPath, streamOf(reference), { signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
      assert.deepEqual(await tempFiles(dir), []);
      const r = await codec.encode(refPath, streamOf(reference), {});
      assertDelta(r);
      const delta = await Deno.readFile(r.deltaPath);
      const stalled = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(delta.subarray(0, 10));
        },
      });
      const controller = new AbortController();
      const out = codec.decode(refPath, stalled, { signal: controller.signal });
      setTimeout(() => controller.abort(reason), 100);
      await assert.rejects(collect(out), (err) => err === reason);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(await zstdProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "a missing baseline or binary is an InternalError, not a crash",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = new ZstdCodec({ tempDir: dir });
      await assert.rejects(
        codec.encode(`${dir}/missing.bin`, streamOf(new Uint8Array(1000)), {}),
        (err) => err instanceof SvcError && err.code === "InternalError",
      );
      const { refPath } = await pair(dir, 1000, 12);
      const absent = new ZstdCodec({ tempDir: dir, binary: "/nonexistent/zstd" });
      await assert.rejects(
        absent.encode(refPath, streamOf(new Uint8Array(1000)), { targetBytes: 1000 }),
        (err) => err instanceof SvcError && /cannot start/.test(err.message),
      );
      assert.deepEqual(await tempFiles(dir), []);
      assert.deepEqual(await probeZstd("/nonexistent/zstd"), { available: false });
    }),
});
