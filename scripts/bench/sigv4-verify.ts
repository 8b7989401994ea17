/**
 * CPU cost of verifying one header-signed request (the SDK's GetObject), in microseconds. The
 * target is < 50 µs a request on this kind of machine; it lives here, not in a timed unit test,
 * because a loaded machine makes any wall-clock bound flaky.
 *
 *   node_modules/.bin/deno run -A scripts/bench/sigv4-verify.ts [runs]
 */
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { captureSdk, verify } from "../../src/testing/sigv4-test-signers.ts";

const runs = Number(Deno.args[0] ?? 5000);
const get = new GetObjectCommand({ Bucket: "b", Key: "dir/k.txt" });
const [input] = await captureSdk([(c) => c.send(get)]);
const now = Date.now();
for (let i = 0; i < 500; i++) verify(input, now); // warm-up
for (let round = 1; round <= 3; round++) {
  const start = performance.now();
  for (let i = 0; i < runs; i++) verify(input, now);
  const micros = (performance.now() - start) * 1000 / runs;
  console.log(`round ${round}: ${micros.toFixed(1)} µs per header verification (${runs} runs)`);
}
