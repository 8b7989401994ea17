import assert from "node:assert/strict";
import { mappedGroups, type MappingRule } from "./mapping-rules.ts";

const rule = (overrides: Partial<MappingRule>): MappingRule => ({
  provider: null,
  priority: 0,
  match_type: "email_domain",
  match_field: "email",
  match_value: "example.com",
  group: "staff",
  require_verified_email: true,
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

Deno.test("mapping rules: addresses parse strictly; the domain compares without case", () => {
  const rules = [rule({}), rule({ match_type: "email", match_value: "boss@example.com" })];
  for (
    const email of [
      "eve@evil.example@example.com",
      "@example.com",
      "a b@example.com",
      "a..b@example.com",
      "a@example..com",
      "a@-example.com",
      '"eve"@example.com',
      "boss@example.com@evil.org",
    ]
  ) {
    assert.deepEqual(mappedGroups(rules, "idp", { email }), [], email);
  }
  assert.deepEqual(mappedGroups(rules, "idp", { email: "Boss@EXAMPLE.COM" }), ["staff"]);
});

Deno.test("mapping rules: email rules need email_verified when the caller asks for it", () => {
  const rules = [
    rule({}),
    rule({ match_type: "email", match_value: "boss@example.com", group: "admins" }),
    rule({ match_type: "equals", match_field: "hd", match_value: "example.com", group: "hd" }),
  ];
  const strict = { checkVerifiedEmail: true };
  const claims = { email: "boss@example.com", hd: "example.com" };
  assert.deepEqual(mappedGroups(rules, "idp", claims, strict), ["hd"]);
  assert.deepEqual(
    mappedGroups(rules, "idp", { ...claims, email_verified: "true" }, strict),
    ["hd"],
    "only the JSON true counts",
  );
  assert.deepEqual(
    mappedGroups(rules, "idp", { ...claims, email_verified: true }, strict),
    ["staff", "admins", "hd"],
  );
  assert.deepEqual(mappedGroups(rules, "idp", claims), ["staff", "admins", "hd"]);
  const relaxed = [rule({ require_verified_email: false }), ...rules.slice(1)];
  assert.deepEqual(mappedGroups(relaxed, "idp", claims, strict), ["staff", "hd"]);
});
