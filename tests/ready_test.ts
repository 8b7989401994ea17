import assert from "node:assert/strict";
import { startSvc } from "./helpers/svc.ts";

Deno.test("ready: 200 with status ready while the backend answers, unauthenticated", async () => {
  await using svc = await startSvc();
  const res = await fetch(`${svc.url}/_/ready`);
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body.status, "ready");
  assert.equal(body.checks.backend.status, "ok");
  assert.equal(res.headers.get("cache-control"), "no-store");
});

Deno.test("ready: 503 once the backend fails, 200 again after it recovers, no restart", async () => {
  await using svc = await startSvc({
    env: { SVC_READY_TIMEOUT_SECS: "0.5", SVC_READY_RETRIES: "1" },
  });
  // The data directory vanishing makes every backend listing fail.
  const moved = `${svc.dataDir}-moved`;
  await Deno.rename(svc.dataDir, moved);
  try {
    const down = await fetch(`${svc.url}/_/ready`);
    const body = await down.json();
    assert.equal(down.status, 503);
    assert.equal(body.status, "not_ready");
    assert.equal(body.checks.backend.status, "error");
    assert.equal(body.checks.backend.attempts, 2);
  } finally {
    await Deno.rename(moved, svc.dataDir);
  }
  const up = await fetch(`${svc.url}/_/ready`);
  assert.equal(up.status, 200);
  assert.equal((await up.json()).status, "ready");
});
