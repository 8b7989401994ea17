import assert from "node:assert/strict";
import { ConfigError } from "../config/schema/schema-common.ts";
import { systemClock } from "../jobs/clock.ts";
import { processClock, testClockOffsetSecs } from "./test-clock.ts";

Deno.test("the test clock offset: unset is the system clock, a signed integer shifts it", () => {
  assert.equal(testClockOffsetSecs({}), 0);
  assert.equal(processClock({}), systemClock);
  assert.equal(testClockOffsetSecs({ SVC_TEST_CLOCK_OFFSET_SECS: "-86400" }), -86400);
  const shifted = processClock({ SVC_TEST_CLOCK_OFFSET_SECS: "-86400" });
  const drift = Date.now() - 86_400_000 - shifted.now();
  assert.ok(Math.abs(drift) < 1000, `drift ${drift}`);
  assert.ok(
    Math.abs(processClock({ SVC_TEST_CLOCK_OFFSET_SECS: "+60" }).now() - Date.now() - 60_000) <
      1000,
  );
});

Deno.test("the test clock offset refuses what is not a whole number of seconds", () => {
  for (const bad of ["1.5", "soon", "-", "1e6"]) {
    assert.throws(
      () => testClockOffsetSecs({ SVC_TEST_CLOCK_OFFSET_SECS: bad }),
      (err: Error) => err instanceof ConfigError && err.message.includes(`"${bad}"`),
    );
  }
});
