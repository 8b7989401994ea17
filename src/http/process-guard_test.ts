import assert from "node:assert/strict";
import { guardProcessErrors } from "./process-guard.ts";

Deno.test("an unhandled promise rejection is caught once the guard is installed", async () => {
  guardProcessErrors();
  let seen: unknown = null;
  const watch = (event: PromiseRejectionEvent) => seen = event.reason;
  globalThis.addEventListener("unhandledrejection", watch);
  try {
    // Without the guard's preventDefault this rejection would fail the test run (and, in svc,
    // end the process).
    Promise.reject(new Error("nobody awaits this"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.match(String(seen), /nobody awaits this/);
  } finally {
    globalThis.removeEventListener("unhandledrejection", watch);
  }
});
