import assert from "node:assert/strict";
import type { Backend, BucketEntry } from "./backend.ts";
import { BackendHealth, bootProbe } from "./backend-health.ts";

/** A backend whose listBuckets fails while `down` is set (only listBuckets is used here). */
function flaky(state: { down: boolean; calls: number }): Backend {
  return {
    listBuckets: (): Promise<BucketEntry[]> => {
      state.calls++;
      return state.down ? Promise.reject(new Error("connection refused")) : Promise.resolve([]);
    },
  } as unknown as Backend;
}

const hanging = {
  listBuckets: () => new Promise<BucketEntry[]>(() => {}),
} as unknown as Backend;

Deno.test("boot probe: enforce refuses only when every backend fails; warn and off never do", async () => {
  const a = { down: true, calls: 0 }, b = { down: false, calls: 0 };
  const health = new BackendHealth([
    { name: "a", backend: flaky(a) },
    { name: "b", backend: flaky(b) },
  ], 1000);
  assert.equal(await bootProbe(health, "enforce"), null);
  assert.equal(health.available("a"), false);
  assert.equal(health.available("b"), true);

  b.down = true;
  const allDown = new BackendHealth([
    { name: "a", backend: flaky(a) },
    { name: "b", backend: flaky(b) },
  ], 1000);
  assert.match((await bootProbe(allDown, "enforce"))!, /every backend failed.*"a".*"b"/);
  assert.equal(await bootProbe(allDown, "warn"), null);
  const calls = a.calls;
  const off = new BackendHealth([{ name: "a", backend: flaky(a) }], 1000);
  assert.equal(await bootProbe(off, "off"), null);
  assert.equal(a.calls, calls, "off does not probe");
  assert.equal(off.available("a"), true);
});

Deno.test("boot probe: a backend that never answers fails after the timeout", async () => {
  const health = new BackendHealth([{ name: "slow", backend: hanging }], 50);
  const [report] = await health.probe();
  assert.equal(report.ok, false);
  assert.match(report.error!, /no answer within 0.05 s/);
  assert.equal(health.available("slow"), false);
});

/** Waits (up to 5 s, polling) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

Deno.test("backend health: an unavailable backend is re-probed until it recovers", async () => {
  const state = { down: true, calls: 0 };
  const health = new BackendHealth([{ name: "x", backend: flaky(state) }], 1000);
  await health.probe();
  assert.equal(health.available("x"), false);
  const stop = health.startReprobe(20);
  try {
    await eventually(() => state.calls >= 3, "re-probed twice");
    assert.equal(health.available("x"), false);
    state.down = false;
    await eventually(() => health.available("x"), "available again");
    const settled = state.calls;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(state.calls, settled, "a healthy backend is not probed again");
  } finally {
    stop();
  }
});
