/**
 * Chunked prediction: a stream cut after matches predicts and rebuilds chunk by chunk, on any
 * thread, to exactly its tokens; zlib's lazy parse needs no correction for the cut; the chunked
 * record (`Q`) round trips and refuses a damaged chunk table.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { sample } from "../../../testing/archive-samples.ts";
import { isFormatProblem } from "../byte-io.ts";
import { contractFile, expandFile } from "../token-files.ts";
import { DeflateModel, MODEL_PARAMS } from "./deflate-model.ts";
import { chunkTasks, type ChunkTokens, planChunks, predictChunk } from "./model-chunks.ts";
import { runJobs, stopModelThreads } from "./model-threads.ts";

const content = sample(21, 3 << 20);

/** The model's own parse of the content: the tokens a producer it describes exactly writes. */
function ownTokens(model: number) {
  const m = new DeflateModel(content, MODEL_PARAMS[model]);
  const lengths = new Uint16Array(content.length);
  const distances = new Uint16Array(content.length);
  let count = 0;
  while (m.next()) {
    lengths[count] = m.proposal.length;
    distances[count++] = m.proposal.distance;
    m.accept();
  }
  return { lengths: lengths.subarray(0, count), distances: distances.subarray(0, count), count };
}

function predictTasksOf(model: number, tokens: ReturnType<typeof ownTokens>, bytes: number) {
  const chunks = planChunks(tokens.lengths, tokens.count, bytes);
  return chunkTasks(content, chunks, model, false).map((task) => ({
    ...task,
    lengths: tokens.lengths.subarray(task.firstToken, task.firstToken + task.tokens),
    distances: tokens.distances.subarray(task.firstToken, task.firstToken + task.tokens),
    limit: task.tokens,
  }));
}

Deno.test("chunks of a lazy-parse stream need no corrections (zlib -9, -6, Node -9)", () => {
  for (const model of [0, 1, 2]) {
    const tokens = ownTokens(model);
    const tasks = predictTasksOf(model, tokens, 256 << 10);
    assert.ok(tasks.length >= 10, `${tasks.length} chunks`);
    for (const task of tasks) {
      assert.deepEqual(predictChunk(task), [], `model ${model}, chunk at ${task.position}`);
    }
  }
});

Deno.test("chunks rebuild exactly on helper threads, corrections included (greedy parse)", async () => {
  try {
    for (const model of [10, 0]) {
      const tokens = ownTokens(model);
      const tasks = predictTasksOf(model, tokens, 256 << 10);
      const predicted = await runJobs(tasks.map((predict) => ({ predict })));
      const fixes = predicted.map((result) => "fixes" in result ? result.fixes! : assert.fail());
      const rebuilt = await runJobs(
        tasks.map((task, i) => ({ rebuild: { ...task, fixes: fixes[i] } })),
      );
      const parts = rebuilt.map((result) => "tokens" in result ? result.tokens : assert.fail());
      const joined = (key: keyof ChunkTokens) => {
        const all = new Uint16Array(tokens.count);
        parts.forEach((part, i) => all.set(part[key], tasks[i].firstToken));
        return all;
      };
      assert.deepEqual(joined("lengths"), tokens.lengths.slice(), `model ${model}`);
      assert.deepEqual(joined("distances"), tokens.distances.slice(), `model ${model}`);
    }
  } finally {
    stopModelThreads();
  }
});

Deno.test("a chunked record round trips, and a damaged chunk table fails", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const big = sample(22, 6 << 20);
    const gz = gzipSync(big, { level: 9 });
    Deno.writeFileSync(`${dir}/in`, gz);
    assert.ok((await expandFile("gzip", `${dir}/in`, `${dir}/x`)).ok);
    const rebuilt = await contractFile(`${dir}/x`, `${dir}/out`);
    assert.equal(rebuilt.size, gz.length);
    assert.deepEqual(Deno.readFileSync(`${dir}/out`), new Uint8Array(gz));
    const form = Deno.readFileSync(`${dir}/x`);
    // The gzip header's RAW record (tag, length 10, 10 bytes), then the chunked record.
    const at = 6 + 2 + 10;
    assert.equal(form[at], 0x51, "a Q record");
    // Tag, model, flags, two varints of content size and token count, then the chunk count.
    let p = at + 3;
    for (let varints = 0; varints < 2; p++) if (form[p] < 0x80) varints++;
    assert.ok(form[p] >= 2 && form[p] < 0x80, `${form[p]} chunks`);
    for (const [offset, value] of [[p, 1], [p + 1, form[p + 1] ^ 1]]) {
      const bad = form.slice();
      bad[offset] = value;
      Deno.writeFileSync(`${dir}/bad`, bad);
      await assert.rejects(() => contractFile(`${dir}/bad`, `${dir}/out`), (err) => {
        assert.ok(isFormatProblem(err), String(err));
        return true;
      });
    }
  } finally {
    stopModelThreads();
    Deno.removeSync(dir, { recursive: true });
  }
});
