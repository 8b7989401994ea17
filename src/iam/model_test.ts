import assert from "node:assert/strict";
import { IamError, validateName, validatePermission } from "./model.ts";
import { generateAccessKeyId, generateSecretAccessKey } from "./keys.ts";
import { instantiate, POLICY_TEMPLATES } from "./policies.ts";

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof IamError && err.kind === "invalid", String(err));
    return err.message;
  }
  assert.fail("expected a validation error");
}

Deno.test("a permission gets defaults and keeps templates and conditions", () => {
  const p = validatePermission({
    actions: ["read", "list", "read"],
    resources: ["photos/home/${iam:username}/*"],
    conditions: { IpAddress: { "aws:SourceIp": "10.0.0.0/8" } },
  });
  assert.deepEqual(p, {
    effect: "Allow",
    actions: ["read", "list"],
    resources: ["photos/home/${iam:username}/*"],
    conditions: { IpAddress: { "aws:SourceIp": ["10.0.0.0/8"] } },
  });
});

Deno.test("bad permissions are refused with a message naming the field and value", () => {
  assert.match(
    refusal(() => validatePermission({ actions: ["fly"], resources: ["*"] })),
    /unknown action "fly"/,
  );
  assert.match(
    refusal(() => validatePermission({ actions: ["read"], resources: ["b/${username}/*"] })),
    /unknown variable \$\{username\}/,
  );
  assert.match(
    refusal(() =>
      validatePermission({
        actions: ["read"],
        resources: ["b"],
        conditions: { StringEquals: { "s3:prefix": "${env:HOME}" } },
      })
    ),
    /unknown variable \$\{env:HOME\}/,
  );
  assert.match(
    refusal(() =>
      validatePermission({
        actions: ["read"],
        resources: ["b"],
        conditions: { IpAddress: { "aws:SourceIp": ["10.0.0.300"] } },
      })
    ),
    /"10.0.0.300" is not an IP address or CIDR block/,
  );
  assert.match(
    refusal(() =>
      validatePermission({ actions: ["read"], resources: ["b"], conditions: { Foo: {} } })
    ),
    /unknown condition operator "Foo"/,
  );
  assert.match(
    refusal(() =>
      validatePermission({
        actions: ["read"],
        resources: ["b"],
        conditions: { StringEquals: { "aws:SourceIp": "x" } },
      })
    ),
    /condition key "aws:SourceIp" is not supported/,
  );
  assert.match(
    refusal(() => validatePermission({ effect: "Maybe", actions: ["read"], resources: ["b"] })),
    /effect must be "Allow" or "Deny", got "Maybe"/,
  );
  assert.match(refusal(() => validatePermission({ actions: [], resources: ["b"] })), /non-empty/);
  assert.match(refusal(() => validatePermission({ actions: ["read"], resources: ["b/"] })), /ends/);
});

Deno.test("reserved and malformed names are refused", () => {
  assert.match(refusal(() => validateName("$bootstrap", "User")), /reserved/);
  assert.match(refusal(() => validateName("a/b", "User")), /"a\/b" must be 1-64/);
  assert.equal(validateName("alice@example.com", "User"), "alice@example.com");
});

Deno.test("generated keys have AWS shapes and differ every time", () => {
  const ids = new Set<string>();
  const secrets = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const id = generateAccessKeyId();
    const secret = generateSecretAccessKey();
    assert.match(id, /^AKIA[A-Z2-7]{16}$/);
    assert.match(secret, /^[A-Za-z0-9]{40}$/);
    ids.add(id);
    secrets.add(secret);
  }
  assert.equal(ids.size, 200);
  assert.equal(secrets.size, 200);
});

Deno.test("every canned policy validates once its bucket is filled in", () => {
  assert.ok(POLICY_TEMPLATES.length >= 5);
  for (const template of POLICY_TEMPLATES) {
    const permissions = instantiate(template, "photos");
    for (const p of permissions) validatePermission(p, template.id);
    assert.equal(
      JSON.stringify(permissions).includes("{bucket}"),
      false,
      `${template.id} leaves no placeholder`,
    );
  }
});
