import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import {
  type EncodeResult,
  MAX_SOURCE_WINDOW,
  probeXdelta3,
  sourceWindow,
  Xdelta3Codec,
} from "./codec.ts";

const probe = await probeXdelta3();
const ignore = !probe.available;
if (ignore) console.warn(`skipping xdelta3 codec tests: ${probe.reason}`);

/** Deterministic fast PRNG (xorshift32) so large inputs cost nothing to make. */
function fillRandom(buf: Uint8Array, seed: number): void {
  if (buf.byteOffset % 4 !== 0) {
    const aligned = new Uint8Array(buf.length);
    fillRandom(aligned, seed);
    buf.set(aligned);
    return;
  }
  let x = seed >>> 0 || 1;
  const words = new Uint32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  for (let i = words.length * 4; i < buf.length; i++) buf[i] = x = (x * 1103515245 + 12345) >>> 0;
}

/** Changes ~`fraction` of `buf` in 1 KiB runs. */
function mutate(buf: Uint8Array, fraction: number, seed: number): void {
  const runs = Math.max(1, Math.round((buf.length * fraction) / 1024));
  let x = seed;
  for (let r = 0; r < runs; r++) {
    x = (x * 1103515245 + 12345) >>> 0;
    const at = x % Math.max(1, buf.length - 1024);
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
  const dir = await Deno.makeTempDir({ prefix: "svc-codec-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function tempFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) if (e.name.endsWith(".delta")) names.push(e.name);
  return names;
}

/** Running xdelta3 processes whose command line mentions `needle` (a unique temp path). */
async function xdeltaProcesses(needle: string): Promise<number> {
  const out = await new Deno.Command("pgrep", { args: ["-f", `xdelta3.*${needle}`] }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim()).length;
}

function setup(dir: string) {
  return new Xdelta3Codec({ tempDir: dir, acceptsA: probe.acceptsA });
}

function assertDelta(r: EncodeResult): asserts r is Extract<EncodeResult, { aborted: false }> {
  assert.equal(r.aborted, false);
}

Deno.test("probe reports the installed xdelta3 and whether -a is accepted", () => {
  if (ignore) return;
  assert.equal(probe.available, true);
  assert.match(probe.version!, /^\d+\.\d+/);
  if (probe.version === "3.0.11") assert.equal(probe.acceptsA, false);
});

Deno.test("probe of a missing binary is unavailable, never a throw", async () => {
  const p = await probeXdelta3("/nonexistent/xdelta3-missing");
  assert.equal(p.available, false);
  assert.equal(p.acceptsA, false);
  assert.match(p.reason!, /not found/);
});

Deno.test({
  name: "random 1 MiB pairs with ~1% changes round-trip byte-identically",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      for (const seed of [1, 2, 3]) {
        const reference = new Uint8Array(1 << 20);
        fillRandom(reference, seed);
        const target = reference.slice();
        mutate(target, 0.01, seed * 7);
        const refPath = `${dir}/ref-${seed}.bin`;
        await Deno.writeFile(refPath, reference);
        const r = await codec.encode(refPath, streamOf(target), {});
        assertDelta(r);
        assert.equal((await Deno.stat(r.deltaPath)).size, r.deltaBytes);
        assert.ok(r.deltaBytes < target.length / 20, `delta ${r.deltaBytes} B too large`);
        const decoded = await collect(
          codec.decode(refPath, (await Deno.open(r.deltaPath)).readable, {}),
        );
        assert.equal(decoded.length, target.length);
        assert.deepEqual(decoded, target);
        await Deno.remove(r.deltaPath);
      }
    }),
});

/** A minimal ustar header for one member. */
function tarHeader(name: string, size: number): Uint8Array {
  const h = new Uint8Array(512);
  const put = (s: string, at: number) => h.set(new TextEncoder().encode(s), at);
  put(name, 0);
  put("0000644\0", 100);
  put("0000000\0", 108);
  put("0000000\0", 116);
  put(size.toString(8).padStart(11, "0") + "\0", 124);
  put("00000000000\0", 136);
  put("        ", 148);
  put("0", 156);
  put("ustar\0" + "00", 257);
  const sum = h.reduce((a, b) => a + b, 0);
  put(sum.toString(8).padStart(6, "0") + "\0 ", 148);
  return h;
}

function tarOf(members: [string, Uint8Array][]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, body] of members) {
    parts.push(tarHeader(name, body.length), body, new Uint8Array((512 - body.length % 512) % 512));
  }
  parts.push(new Uint8Array(1024));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), at += p.length);
  return out;
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const gz = new CompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>;
  return await collect(streamOf(bytes).pipeThrough(gz));
}

Deno.test({
  name: "a tar with a gzip member round-trips byte-identically (-D)",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      const text = new TextEncoder().encode("log line with some repetition\n".repeat(20000));
      const noise = new Uint8Array(200_000);
      fillRandom(noise, 42);
      const v1 = tarOf([["app.log.gz", await gzip(text)], ["blob.bin", noise]]);
      const text2 = text.slice();
      text2.set(new TextEncoder().encode("CHANGED"), 1000);
      const noise2 = noise.slice();
      mutate(noise2, 0.01, 5);
      const v2 = tarOf([["app.log.gz", await gzip(text2)], ["blob.bin", noise2], [
        "extra.gz",
        await gzip(noise.subarray(0, 5000)),
      ]]);
      // The gzip magic really is inside the file, not at its start.
      assert.notEqual(v2[0], 0x1f);
      assert.ok(v2.findIndex((b, i) => b === 0x1f && v2[i + 1] === 0x8b) > 0);
      const refPath = `${dir}/reference.bin`;
      await Deno.writeFile(refPath, v1);
      for (const target of [v2, await gzip(v2)]) {
        const r = await codec.encode(refPath, streamOf(target), {});
        assertDelta(r);
        const decoded = await collect(
          codec.decode(refPath, (await Deno.open(r.deltaPath)).readable, {}),
        );
        assert.deepEqual(decoded, target);
        await Deno.remove(r.deltaPath);
      }
    }),
});

Deno.test({
  name: "dissimilar data past maxDeltaBytes aborts quickly and leaves no temp file",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      const reference = new Uint8Array(4 << 20);
      fillRandom(reference, 10);
      const target = new Uint8Array(16 << 20);
      fillRandom(target, 11);
      const refPath = `${dir}/ref.bin`;
      await Deno.writeFile(refPath, reference);
      // Count what the encoder pulled: an early abort stops reading the target part way.
      let pulled = 0;
      const counted = streamOf(target).pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            pulled += chunk.byteLength;
            controller.enqueue(chunk);
          },
        }),
      );
      const r = await codec.encode(refPath, counted, { maxDeltaBytes: 64 * 1024 });
      assert.deepEqual(r, { aborted: true });
      assert.ok(pulled < target.length, `the encoder read all ${pulled} bytes before aborting`);
      assert.deepEqual(await tempFiles(dir), []);
      assert.equal(await xdeltaProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "a corrupt delta fails decode with InternalError and the stderr tail",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      const refPath = `${dir}/ref.bin`;
      const reference = new Uint8Array(100_000);
      fillRandom(reference, 3);
      await Deno.writeFile(refPath, reference);
      const garbage = new TextEncoder().encode("this is not a vcdiff stream at all");
      await assert.rejects(collect(codec.decode(refPath, streamOf(garbage), {})), (err) => {
        assert.ok(err instanceof SvcError);
        assert.equal(err.code, "InternalError");
        assert.match(err.message, /^Delta codec failed: exit \d+: .*VCDIFF/s);
        return true;
      });
      // A valid delta applied against the wrong reference is caught by xdelta3's checksum.
      const target = reference.slice();
      mutate(target, 0.01, 4);
      const r = await codec.encode(refPath, streamOf(target), {});
      assertDelta(r);
      const delta = await Deno.readFile(r.deltaPath);
      delta[delta.length - 5] ^= 0xff;
      await assert.rejects(collect(codec.decode(refPath, streamOf(delta), {})), (err) => {
        assert.ok(err instanceof SvcError && err.code === "InternalError");
        return true;
      });
      assert.equal(await xdeltaProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "aborting mid-encode kills xdelta3, removes the temp file and rejects cleanly",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      const refPath = `${dir}/ref-abort.bin`;
      const reference = new Uint8Array(1 << 20);
      fillRandom(reference, 8);
      await Deno.writeFile(refPath, reference);
      // A target that trickles and never ends on its own.
      let sent = 0;
      let cancelled = false;
      const target = new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((r) => setTimeout(r, 5));
          controller.enqueue(
            reference.slice(sent % reference.length, sent % reference.length + 65536),
          );
          sent += 65536;
        },
        cancel() {
          cancelled = true;
        },
      });
      const controller = new AbortController();
      const encoding = codec.encode(refPath, target, { signal: controller.signal });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await xdeltaProcesses(refPath), 1);
      assert.equal((await tempFiles(dir)).length, 1);
      controller.abort(new Error("client went away"));
      await assert.rejects(encoding, (err) => {
        assert.ok(err instanceof SvcError && err.code === "InternalError");
        assert.match(err.message, /aborted \(client went away\)/);
        return true;
      });
      assert.equal(cancelled, true);
      assert.deepEqual(await tempFiles(dir), []);
      assert.equal(await xdeltaProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "an already-aborted signal never starts a process; decode abort errors the stream",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      const refPath = `${dir}/ref.bin`;
      const reference = new Uint8Array(300_000);
      fillRandom(reference, 9);
      await Deno.writeFile(refPath, reference);
      const reason = new SvcError("InternalError", "Delta codec failed: timed out");
      await assert.rejects(
        codec.encode(refPath, streamOf(reference), { signal: AbortSignal.abort(reason) }),
        (err) => err === reason,
      );
      assert.deepEqual(await tempFiles(dir), []);
      const r = await codec.encode(refPath, streamOf(reference), {});
      assertDelta(r);
      // Decode with a delta stream that stalls forever: the abort must still end it.
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
      assert.equal(await xdeltaProcesses(refPath), 0);
    }),
});

Deno.test({
  name: "a missing reference file is an InternalError, not a crash",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      const codec = setup(dir);
      await assert.rejects(
        codec.encode(`${dir}/missing.bin`, streamOf(new Uint8Array(1000)), {}),
        (err) => err instanceof SvcError && err.code === "InternalError",
      );
      assert.deepEqual(await tempFiles(dir), []);
    }),
});

Deno.test("the default source window is the whole baseline in whole MiB, capped", () => {
  const mib = 1024 * 1024;
  assert.equal(sourceWindow(0), mib);
  assert.equal(sourceWindow(1000), mib);
  assert.equal(sourceWindow(22_536_704), 22 * mib);
  assert.equal(sourceWindow(22 * mib), 22 * mib);
  assert.equal(sourceWindow(111_840_256), 107 * mib);
  assert.equal(sourceWindow(5 * 1024 * mib), MAX_SOURCE_WINDOW);
});

Deno.test({
  name: "encode and decode size -B to the baseline; old and new deltas decode either way",
  ignore,
  fn: () =>
    withDir(async (dir) => {
      // A wrapper binary that records its arguments, then runs the real xdelta3.
      const wrapper = `${dir}/xdelta3-logged`;
      await Deno.writeTextFile(
        wrapper,
        `#!/bin/sh\necho "$@" >> "${dir}/args"\nexec xdelta3 "$@"\n`,
      );
      await Deno.chmod(wrapper, 0o755);
      const reference = new Uint8Array(1536 * 1024);
      fillRandom(reference, 21);
      const target = reference.slice();
      mutate(target, 0.01, 22);
      const refPath = `${dir}/ref.bin`;
      await Deno.writeFile(refPath, reference);
      const current = new Xdelta3Codec({ tempDir: dir, acceptsA: probe.acceptsA, binary: wrapper });
      const r = await current.encode(refPath, streamOf(target), {});
      assertDelta(r);
      const encodeArgs = (await Deno.readTextFile(`${dir}/args`)).split("\n")[0].split(" ");
      const at = encodeArgs.indexOf("-B");
      assert.ok(at > 0, `no -B in ${encodeArgs.join(" ")}`);
      assert.equal(encodeArgs[at + 1], String(2 * 1024 * 1024));
      // A delta of the flags before this change (no -B) decodes with the new ones.
      const old = new Xdelta3Codec({
        tempDir: dir,
        acceptsA: probe.acceptsA,
        encodeArgs: ["-W", "1048576"],
      });
      const o = await old.encode(refPath, streamOf(target), {});
      assertDelta(o);
      const readDelta = async (path: string) => (await Deno.open(path)).readable;
      assert.deepEqual(
        await collect(current.decode(refPath, await readDelta(o.deltaPath), {})),
        target,
      );
      // The decode (the wrapper's second run) keeps the whole baseline in its window too.
      const decodeArgs = (await Deno.readTextFile(`${dir}/args`)).split("\n")[1].split(" ");
      assert.equal(decodeArgs[0], "-d");
      assert.equal(decodeArgs[decodeArgs.indexOf("-B") + 1], String(2 * 1024 * 1024));
      // A release before this change (decode without -B) reads the new deltas: rollback works.
      const before = await new Deno.Command("xdelta3", {
        args: ["-d", "-s", refPath, "-c", r.deltaPath],
        stdout: "piped",
      }).output();
      assert.equal(before.success, true);
      assert.deepEqual(before.stdout, target);
    }),
});

Deno.test({
  name: "bench: 100 MiB pair, 1% changed in 1 KiB runs (SVC_CODEC_BENCH=1)",
  ignore: ignore || !Deno.env.get("SVC_CODEC_BENCH"),
  fn: () =>
    withDir(async (dir) => {
      const rss = () => (Deno.memoryUsage().rss / 2 ** 20).toFixed(0) + " MiB";
      console.log(`rss at start: ${rss()}`);
      const refPath = `${dir}/ref.bin`;
      const targetPath = `${dir}/target.bin`;
      const ref = await Deno.open(refPath, { write: true, create: true });
      const tgt = await Deno.open(targetPath, { write: true, create: true });
      const chunk = new Uint8Array(1 << 20);
      for (let i = 0; i < 100; i++) {
        fillRandom(chunk, 1000 + i);
        await ref.write(chunk);
        mutate(chunk, 0.01, 77 + i);
        await tgt.write(chunk);
      }
      ref.close();
      tgt.close();
      console.log(`rss after generating: ${rss()}`);
      const variants: [string, string[] | undefined][] = [[
        "default (-W 1MiB, -B baseline)",
        undefined,
      ], [
        "xdelta3 default window",
        [],
      ]];
      for (const [label, encodeArgs] of variants) {
        const codec = new Xdelta3Codec({ tempDir: dir, acceptsA: probe.acceptsA, encodeArgs });
        let t = performance.now();
        const r = await codec.encode(refPath, (await Deno.open(targetPath)).readable, {});
        const encodeMs = performance.now() - t;
        assertDelta(r);
        t = performance.now();
        const outPath = `${dir}/out.bin`;
        const out = await Deno.open(outPath, { write: true, create: true, truncate: true });
        const reader = codec.decode(refPath, (await Deno.open(r.deltaPath)).readable, {})
          .getReader();
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          let off = 0;
          while (off < value.length) off += await out.write(value.subarray(off));
        }
        out.close();
        const decodeMs = performance.now() - t;
        const cmp = await new Deno.Command("cmp", { args: [targetPath, outPath] }).output();
        assert.equal(cmp.code, 0, "decoded bytes differ");
        console.log(
          `${label}: delta ${r.deltaBytes} B, encode ${encodeMs.toFixed(0)} ms, ` +
            `decode ${decodeMs.toFixed(0)} ms, rss now ${rss()}`,
        );
        await Deno.remove(r.deltaPath);
      }
      const status = await Deno.readTextFile("/proc/self/status");
      console.log(`test process ${/VmHWM:\s+\d+ kB/.exec(status)?.[0]}`);
    }),
});
