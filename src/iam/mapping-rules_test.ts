import assert from "node:assert/strict";
import { mappedGroups, type MappingRule } from "./mapping-rules.ts";

const rule = (overrides: Partial<MappingRule>): MappingRule => ({
  provider: null,
  priority: 0,
  match_type: "email_domain",
  match_field: "email",
  match_value: "example.com",
  group: "staff",
  ...overrides,
});

Deno.test("mapping rules: email domain, exact email and claim equality; union of groups", () => {
  const rules = [
    rule({}),
    rule({ match_type: "email", match_value: "Boss@Example.com", group: "admins" }),
    rule({ match_type: "equals", match_field: "groups", match_value: "ops", group: "operators" }),
    rule({ provider: "other", group: "never" }),
  ];
  assert.deepEqual(mappedGroups(rules, "idp", { email: "ann@EXAMPLE.com" }), ["staff"]);
  assert.deepEqual(mappedGroups(rules, "idp", { email: "boss@example.com" }), ["staff", "admins"]);
  assert.deepEqual(
    mappedGroups(rules, "idp", { email: "x@elsewhere.org", groups: ["dev", "ops"] }),
    ["operators"],
  );
  assert.deepEqual(mappedGroups(rules, "other", { email: "a@example.com" }), ["staff", "never"]);
});

Deno.test("mapping rules: a subdomain or a look-alike address does not match a domain", () => {
  const rules = [rule({})];
  for (const email of ["a@mail.example.com", "a@example.com.evil.org", "example.com", "a@"]) {
    assert.deepEqual(mappedGroups(rules, "idp", { email }), [], email);
  }
  assert.deepEqual(mappedGroups(rules, "idp", {}), []);
});
