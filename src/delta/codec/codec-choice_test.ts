import assert from "node:assert/strict";
import {
  CodecSet,
  decodedSizeOf,
  preferredCodec,
  zstdJobBytes,
  zstdLevelFor,
  zstdMemoryBudgetBytes,
} from "./codec-choice.ts";
import type { DeltaCodec, EncodeOptions } from "./codec.ts";

/** A codec that records what it was asked to do. */
function fake(name: string, calls: { codec: string; options?: EncodeOptions }[]): DeltaCodec {
  return {
    name,
    encode(_reference, target, options) {
      calls.push({ codec: name, options });
      return target.cancel().then(() => ({
        aborted: false as const,
        deltaPath: "/dev/null",
        deltaBytes: 0,
        codec: name,
      }));
    },
    decode: (_r, delta) => delta,
    async decodeToFile(_r, delta, outPath) {
      calls.push({ codec: name });
      await Deno.writeFile(outPath, delta);
    },
  };
}

const MiB = 1024 * 1024;
const empty = () => new Blob([]).stream();

Deno.test("codec choice: settings, levels and sizes", () => {
  assert.equal(preferredCodec(undefined, undefined), "zstd");
  assert.equal(preferredCodec("auto", "archive-tokens-1"), "zstd");
  assert.equal(preferredCodec("xdelta3", undefined), "xdelta3");
  assert.equal(preferredCodec("zstd", "archive-tokens-1"), "zstd");
  assert.equal(zstdLevelFor(undefined), 3);
  assert.equal(zstdLevelFor("archive-tokens-1"), 9);
  assert.equal(zstdJobBytes(100, 50), 220);
  assert.equal(zstdJobBytes(100, 1000), 2200);
  assert.equal(decodedSizeOf(100, undefined), 100);
  assert.equal(decodedSizeOf(100, "archive-tokens-1"), 150);
  assert.equal(zstdMemoryBudgetBytes("64"), 64 * MiB);
  assert.equal(zstdMemoryBudgetBytes("0"), 0);
  assert.equal(zstdMemoryBudgetBytes("lots"), 1024 * MiB, "not a whole number: the default");
  assert.equal(zstdMemoryBudgetBytes(undefined), 1024 * MiB);
});

Deno.test("codec choice: zstd when possible, else xdelta3 and why", async () => {
  const calls: { codec: string; options?: EncodeOptions }[] = [];
  const set = new CodecSet({
    xdelta3: fake("xdelta3", calls),
    zstd: fake("zstd", calls),
    zstdMemoryBytes: 100 * MiB,
  });
  const request = { setting: "auto", transform: undefined, baselineBytes: 10 * MiB };
  const chosen = set.chooseEncoder({ ...request, targetBytes: 12 * MiB });
  assert.equal(chosen.name, "zstd");
  assert.equal(chosen.fallback, undefined);
  const result = await chosen.encode("/ref", empty(), {});
  assert.equal(!result.aborted && result.codec, "zstd");
  const options = calls[0].options as EncodeOptions & { level?: number };
  assert.equal(options.targetBytes, 12 * MiB, "the target size reaches zstd");
  assert.equal(options.level, 3);
  assert.equal(set.budget.held, zstdJobBytes(10 * MiB, 12 * MiB));

  // The budget is held until release: a second large job falls back to xdelta3.
  const second = set.chooseEncoder({ ...request, baselineBytes: 40 * MiB, targetBytes: 40 * MiB });
  assert.equal(second.name, "xdelta3");
  assert.match(second.fallback!, /budget/);
  chosen.release();
  assert.equal(set.budget.held, 0);

  const unknownSize = set.chooseEncoder({ ...request, targetBytes: undefined });
  assert.equal(unknownSize.name, "xdelta3");
  assert.match(unknownSize.fallback!, /size is not known/);
  const huge = set.chooseEncoder({ ...request, baselineBytes: 2 ** 31, targetBytes: 1 });
  assert.equal(huge.name, "xdelta3");
  const asked = set.chooseEncoder({ ...request, setting: "xdelta3", targetBytes: 1 });
  assert.equal(asked.name, "xdelta3");
  assert.equal(asked.fallback, undefined, "asked for, not a fallback");
  const tokens = set.chooseEncoder({ ...request, transform: "archive-tokens-1", targetBytes: 1 });
  await tokens.encode("/ref", empty(), {});
  assert.equal((calls.at(-1)!.options as { level?: number }).level, 9);
  tokens.release();

  const noZstd = new CodecSet({ xdelta3: fake("xdelta3", calls) });
  const fallback = noZstd.chooseEncoder({ ...request, targetBytes: 1 });
  assert.equal(fallback.name, "xdelta3");
  assert.match(fallback.fallback!, /no zstd/);
});

Deno.test("codec choice: a delta decodes with the codec that wrote it", async () => {
  const calls: { codec: string }[] = [];
  const dir = await Deno.makeTempDir();
  try {
    const set = new CodecSet({
      xdelta3: fake("xdelta3", calls),
      zstd: fake("zstd", calls),
      zstdMemoryBytes: 0, // no encode fits; a decode is still admitted alone
    });
    const out = `${dir}/out`;
    await set.decoderFor(undefined, 10).decodeToFile("/ref", empty(), out, {});
    await set.decoderFor("xdelta3", 10).decodeToFile("/ref", empty(), out, {});
    await set.decoderFor("zstd", 10).decodeToFile("/ref", empty(), out, {});
    assert.deepEqual(calls.map((c) => c.codec), ["xdelta3", "xdelta3", "zstd"]);
    assert.equal(set.budget.held, 0, "the decode's memory is released");
    const streamed = set.decoderFor("zstd", 10).decode("/ref", new Blob(["abc"]).stream(), {});
    assert.equal(await new Response(streamed).text(), "abc");
    assert.equal(set.budget.held, 0);

    await assert.rejects(
      () => set.decoderFor("lzma", 10).decodeToFile("/ref", empty(), out, {}),
      /unknown delta codec "lzma"/,
    );
    const noZstd = new CodecSet({ xdelta3: fake("xdelta3", calls) });
    await assert.rejects(
      () => noZstd.decoderFor("zstd", 10).decodeToFile("/ref", empty(), out, {}),
      /written by zstd/,
    );
    const failed = noZstd.decoderFor("zstd", 10).decode("/ref", empty(), {});
    await assert.rejects(() => new Response(failed).arrayBuffer(), /written by zstd/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
