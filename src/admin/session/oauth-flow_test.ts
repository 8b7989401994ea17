import assert from "node:assert/strict";
import { AuthorizeBudget, type LoginFlow, openFlow, sealFlow, SpentStates } from "./oauth-flow.ts";

const flow: LoginFlow = {
  provider: "corp",
  state: "s",
  nonce: "n",
  verifier: "v",
  redirectUri: "https://svc.example/_/api/admin/oauth/callback",
  ip: "192.0.2.1",
  expiresAt: 1000,
};

Deno.test("oauth flow: sealed for its provider under the hash's key, altered seals fail", () => {
  const sealed = sealFlow(flow, "hash-1");
  assert.deepEqual(openFlow(sealed, "hash-1"), flow);
  assert.equal(openFlow(sealed, "hash-2"), null, "another key");
  const [v, , body] = sealed.split(".");
  const other = `${v}.${btoa("other").replace(/=+$/, "")}.${body}`;
  assert.equal(openFlow(other, "hash-1"), null, "the provider is bound");
  const flipped = sealed.slice(0, -3) + (sealed.at(-3) === "A" ? "B" : "A") + sealed.slice(-2);
  assert.equal(openFlow(flipped, "hash-1"), null);
  for (const junk of [undefined, "", "v1", "v1.x.y", "v2.a.b", sealed + "."]) {
    assert.equal(openFlow(junk, "hash-1"), null, String(junk));
  }
  assert.ok(!sealed.includes("192.0.2.1") && !sealed.includes("verifier"), "encrypted");
});

Deno.test("oauth flow: a state is spent once; the budget is per address", () => {
  const spent = new SpentStates();
  assert.equal(spent.spend("a", 100, 0), true);
  assert.equal(spent.spend("a", 100, 50), false);
  assert.equal(spent.spend("b", 300, 200), true, "a is pruned once expired");
  const budget = new AuthorizeBudget(2, 1000, 2);
  assert.deepEqual([budget.take("x", 0), budget.take("x", 1), budget.take("x", 2)], [
    true,
    true,
    false,
  ]);
  assert.equal(budget.take("y", 3), true, "another address has its own budget");
  assert.equal(budget.take("x", 1000), true, "a new window");
});
