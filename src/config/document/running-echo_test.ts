import assert from "node:assert/strict";
import { keepOperatorValues } from "./running-echo.ts";
import { mergePatch } from "./merge-patch.ts";

// The file, and what runs: placeholder expanded, a default filled in, log_level overridden by
// the environment, a named backend with a placeholder endpoint.
const document = {
  access: { access_key_id: "${env:AKID}" },
  advanced: { log_level: "info" },
  storage: { backends: [{ name: "fast", type: "s3", endpoint: "${env:FAST_URL}" }] },
};
const running = {
  access: { access_key_id: "AKIAEXPANDED" },
  advanced: { log_level: "debug", listen_addr: "0.0.0.0:9000" },
  storage: {
    backends: [{ name: "fast", type: "s3", endpoint: "http://fast:9000", region: "us-east-1" }],
  },
};

Deno.test("patch mode: the running config sent back unchanged changes nothing", () => {
  const edits = keepOperatorValues(structuredClone(running), running, document, "patch");
  assert.deepEqual(mergePatch(document, edits), document);
});

Deno.test("patch mode: one edit among echoes changes only that value", () => {
  const sent = structuredClone(running);
  sent.advanced.listen_addr = "127.0.0.1:9100";
  sent.storage.backends[0].region = "eu-west-1";
  const merged = mergePatch(document, keepOperatorValues(sent, running, document, "patch"));
  assert.deepEqual(merged, {
    access: { access_key_id: "${env:AKID}" },
    // log_level echoed the environment override: the file keeps its own value.
    advanced: { log_level: "info", listen_addr: "127.0.0.1:9100" },
    storage: {
      backends: [{ name: "fast", type: "s3", endpoint: "${env:FAST_URL}", region: "eu-west-1" }],
    },
  });
});

Deno.test("patch mode: null deletions and new list items pass through", () => {
  const sent = {
    advanced: { log_level: null },
    storage: { backends: [...running.storage.backends, { name: "new", type: "filesystem" }] },
  };
  const edits = keepOperatorValues(sent, running, document, "patch");
  assert.deepEqual(edits.advanced, { log_level: null });
  assert.deepEqual((edits.storage as { backends: unknown[] }).backends, [
    { name: "fast", type: "s3", endpoint: "${env:FAST_URL}" },
    { name: "new", type: "filesystem" },
  ]);
});

Deno.test("document mode: only placeholders are restored, everything else as written", () => {
  const sent = structuredClone(running);
  const kept = keepOperatorValues(sent, running, document, "document");
  assert.deepEqual(kept, {
    access: { access_key_id: "${env:AKID}" },
    advanced: { log_level: "debug", listen_addr: "0.0.0.0:9000" },
    storage: {
      backends: [{ name: "fast", type: "s3", endpoint: "${env:FAST_URL}", region: "us-east-1" }],
    },
  });
  // A changed value replaces the placeholder.
  sent.access.access_key_id = "AKIANEW";
  const changed = keepOperatorValues(sent, running, document, "document");
  assert.deepEqual(changed.access, { access_key_id: "AKIANEW" });
});
