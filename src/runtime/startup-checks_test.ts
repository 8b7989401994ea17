/**
 * Unit tests of the startup authentication checks: svc refuses to start open unless
 * `authentication: none` is written, refuses half a credential pair and unknown modes, and warns
 * when it runs open.
 */
import assert from "node:assert/strict";
import type { AccessConfig } from "../config/schema/schema.ts";
import { checkStartupAuth, StartupError } from "./startup-checks.ts";

function access(fields: Partial<AccessConfig> = {}): AccessConfig {
  return { iam_mode: "gui", ...fields };
}

function assertRefused(config: AccessConfig, ...patterns: (string | RegExp)[]): void {
  assert.throws(() => checkStartupAuth(config), (err: unknown) => {
    assert.ok(err instanceof StartupError, `expected StartupError, got ${err}`);
    assert.equal(err.name, "StartupError");
    for (const pattern of patterns) {
      if (typeof pattern === "string") assert.ok(err.message.includes(pattern), err.message);
      else assert.match(err.message, pattern);
    }
    return true;
  });
}

Deno.test("no credentials and no authentication setting is refused with the ways to fix it", () => {
  assertRefused(
    access(),
    "No credentials configured",
    "access.access_key_id",
    "access.secret_access_key",
    "SVC_ACCESS_KEY_ID",
    "SVC_SECRET_ACCESS_KEY",
    "authentication: none",
  );
});

Deno.test("an empty authentication value means auto-detect, so no credentials is refused", () => {
  assertRefused(access({ authentication: "" }), "No credentials configured");
  assertRefused(access({ authentication: "   " }), "No credentials configured");
});

Deno.test("sigv4 without credentials is refused", () => {
  assertRefused(access({ authentication: "sigv4" }), "No credentials configured");
});

Deno.test("a key without a secret, or a secret without a key, is refused", () => {
  assertRefused(access({ access_key_id: "AKIA" }), "must be set together");
  assertRefused(access({ secret_access_key: "s" }), "must be set together");
  // Even when running open: half a pair is a mistake worth stopping for.
  assertRefused(access({ authentication: "none", access_key_id: "AKIA" }), "must be set together");
});

Deno.test("a full credential pair starts without warnings", () => {
  assert.deepEqual(checkStartupAuth(access({ access_key_id: "AKIA", secret_access_key: "s" })), []);
  assert.deepEqual(
    checkStartupAuth(
      access({ authentication: "sigv4", access_key_id: "A", secret_access_key: "s" }),
    ),
    [],
  );
  assert.deepEqual(
    checkStartupAuth(
      access({ authentication: " SigV4 ", access_key_id: "A", secret_access_key: "s" }),
    ),
    [],
  );
});

Deno.test("authentication none starts open with a warning", () => {
  for (const mode of ["none", "NONE", " None "]) {
    const warnings = checkStartupAuth(access({ authentication: mode }));
    assert.equal(warnings.length, 1, mode);
    assert.match(warnings[0], /authentication is none/);
    assert.match(warnings[0], /without a signature/);
  }
  const withPair = checkStartupAuth(
    access({ authentication: "none", access_key_id: "A", secret_access_key: "s" }),
  );
  assert.equal(withPair.length, 1);
});

Deno.test("an unknown authentication mode is refused naming the value", () => {
  for (const mode of ["basic", "off", "nonee", "true"]) {
    assertRefused(
      access({ authentication: mode, access_key_id: "A", secret_access_key: "s" }),
      "access.authentication",
      `"${mode}"`,
    );
    assertRefused(access({ authentication: mode }), "access.authentication");
  }
});
