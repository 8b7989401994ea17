import assert from "node:assert/strict";
import { expandUnchanged } from "./config-runtime.ts";

const env = { SECRET: "from-env", OTHER: "x" };

Deno.test("expandUnchanged: strings the file already held are expanded, new ones stay literal", () => {
  const previous = {
    access: { secret_access_key: "${env:SECRET}" },
    storage: { backends: [{ name: "a", endpoint: "${env:OTHER}" }] },
  };
  const next = {
    access: { secret_access_key: "${env:SECRET}", access_key_id: "${env:OTHER}" },
    storage: { backends: [{ name: "a", endpoint: "${env:OTHER}" }, { name: "${env:SECRET}" }] },
  };
  assert.deepEqual(expandUnchanged(next, previous, env), {
    access: { secret_access_key: "from-env", access_key_id: "${env:OTHER}" },
    storage: { backends: [{ name: "a", endpoint: "x" }, { name: "${env:SECRET}" }] },
  });
});

Deno.test("expandUnchanged: a changed string is literal even if it holds a placeholder", () => {
  const out = expandUnchanged({ a: "${env:SECRET}-2" }, { a: "${env:SECRET}" }, env);
  assert.deepEqual(out, { a: "${env:SECRET}-2" });
});
