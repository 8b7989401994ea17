import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { ReplayBodyComparison } from "../auth/replay/replay-decision.ts";
import { replayBodyCheck } from "./replay-body-check.ts";

function streamOf(text: string): ReadableStream<Uint8Array> {
  return new Response(text).body!;
}

async function drain(body: ReadableStream<Uint8Array>): Promise<unknown> {
  try {
    for await (const _ of body);
  } catch (err) {
    return err;
  }
  return undefined;
}

const FIRST_MD5 = createHash("md5").update("first body").digest("hex");

Deno.test("replay body check: the same body is judged the same, and still never ends cleanly", async () => {
  const comparison: ReplayBodyComparison = { expectedMd5: FIRST_MD5, verdict: "pending" };
  const staged = replayBodyCheck(comparison)!.stage(streamOf("first body"));
  assert.equal(comparison.verdict, "pending", "nothing is judged before the body ends");
  const failure = await drain(staged);
  assert.match(String(failure), /replay/, "the staged copy must not commit");
  assert.equal(comparison.verdict, "same");
});

Deno.test("replay body check: another body is judged different", async () => {
  const comparison: ReplayBodyComparison = { expectedMd5: FIRST_MD5, verdict: "pending" };
  const failure = await drain(replayBodyCheck(comparison)!.stage(streamOf("other body")));
  assert.match(String(failure), /replay/);
  assert.equal(comparison.verdict, "different");
});

Deno.test("replay body check: no comparison ordered, no check", () => {
  assert.equal(replayBodyCheck(undefined), undefined);
});
