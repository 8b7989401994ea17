import assert from "node:assert/strict";
import { carrySecrets, dropNullSecrets, redactSecrets } from "./secret-carry.ts";
import { mergePatch } from "./merge-patch.ts";
import { exportDocument } from "./export.ts";
import { validateConfig } from "../schema/schema.ts";

const previous = {
  access: {
    access_key_id: "AKIAOPERATOR",
    secret_access_key: "operator-secret",
    iam_users: [
      { name: "alice", access_key_id: "AKIAALICE", secret_access_key: "alice-secret" },
      { name: "bob", access_key_id: "AKIABOB", secret_access_key: "bob-secret" },
    ],
  },
  storage: {
    backends: [
      {
        name: "fast",
        type: "s3",
        endpoint: "http://fast:9000",
        secret_access_key: "fast-secret",
        encryption: { mode: "aes256-gcm-proxy", key: "ab".repeat(32) },
      },
      { name: "cold", type: "filesystem", path: "/cold" },
    ],
  },
  advanced: {
    bootstrap_password_hash: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  },
};

Deno.test("redactSecrets removes plain, named and encryption-block secrets, nothing else", () => {
  const redacted = JSON.stringify(redactSecrets(previous));
  for (const secret of ["operator-secret", "alice-secret", "bob-secret", "fast-secret", "$2b$"]) {
    assert.ok(!redacted.includes(secret), `${secret} leaked: ${redacted}`);
  }
  assert.ok(!redacted.includes("ab".repeat(32)));
  for (const kept of ["AKIAOPERATOR", "AKIAALICE", "http://fast:9000", "aes256-gcm-proxy"]) {
    assert.ok(redacted.includes(kept), `${kept} missing`);
  }
});

Deno.test("carrySecrets: a redacted document gets every secret back at the same place", () => {
  const incoming = redactSecrets(previous) as Record<string, unknown>;
  assert.deepEqual(carrySecrets(incoming, previous), previous);
});

Deno.test("carrySecrets: list items are matched by name, not by position", () => {
  const incoming = {
    access: {
      iam_users: [
        { name: "bob", access_key_id: "AKIABOB" },
        { name: "carol", access_key_id: "AKIACAROL" },
        { name: "alice", access_key_id: "AKIAALICE", secret_access_key: "" },
      ],
    },
  };
  const carried = carrySecrets(incoming, previous) as typeof previous;
  assert.deepEqual(carried.access.iam_users, [
    { name: "bob", access_key_id: "AKIABOB", secret_access_key: "bob-secret" },
    { name: "carol", access_key_id: "AKIACAROL" },
    { name: "alice", access_key_id: "AKIAALICE", secret_access_key: "alice-secret" },
  ]);
});

Deno.test("carrySecrets: a new value wins, null is kept to clear the secret", () => {
  const incoming = {
    access: { access_key_id: "AKIAOPERATOR", secret_access_key: "rotated" },
    storage: { backends: [{ name: "fast", type: "s3", secret_access_key: null }] },
  };
  const carried = carrySecrets(incoming, previous) as Record<string, Record<string, unknown>>;
  assert.equal(carried.access.secret_access_key, "rotated");
  const backends = carried.storage.backends as Record<string, unknown>[];
  assert.equal(backends[0].secret_access_key, null);
  const cleaned = dropNullSecrets(carried) as typeof carried;
  assert.ok(!("secret_access_key" in (cleaned.storage.backends as object[])[0]));
});

Deno.test("carrySecrets: an object the export showed and the client removed stays removed", () => {
  const shown = redactSecrets(previous) as Record<string, unknown>;
  const incoming = { access: { access_key_id: "AKIAOPERATOR" } };
  const carried = carrySecrets(incoming, previous, shown);
  // storage was shown (it has non-secret content) and left out on purpose: not recreated.
  assert.equal(carried.storage, undefined);
  // advanced held only a secret, so the export could not show it: its secret is carried.
  assert.deepEqual(carried.advanced, {
    bootstrap_password_hash: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  });
});

Deno.test("carrySecrets: canonical export, re-applied whole, keeps the bootstrap hash", () => {
  const document = {
    access: { access_key_id: "AKIAOPERATOR", secret_access_key: "operator-secret" },
    advanced: {
      listen_addr: "0.0.0.0:9000",
      bootstrap_password_hash: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
    },
  };
  const shown = exportDocument(validateConfig(document));
  // listen_addr is the default and the hash a secret: the export has no advanced section.
  assert.equal(shown.advanced, undefined);
  const carried = carrySecrets(structuredClone(shown), document, shown);
  assert.deepEqual(carried.advanced, {
    bootstrap_password_hash: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  });
  assert.equal((carried.access as Record<string, unknown>).secret_access_key, "operator-secret");
});

Deno.test("carrySecrets on a merge patch: absent kept, null still deletes", () => {
  const patch = { access: { secret_access_key: null, access_key_id: "AKIANEW" } };
  const merged = mergePatch(previous, carrySecrets(patch, previous)) as typeof previous;
  assert.equal(merged.access.access_key_id, "AKIANEW");
  assert.ok(!("secret_access_key" in merged.access));
  assert.equal(merged.storage.backends[0].secret_access_key, "fast-secret");
  // A patch replacing a list keeps the secrets of the items it names again.
  const listPatch = { storage: { backends: [{ name: "fast", type: "s3", endpoint: "http://x" }] } };
  const replaced = mergePatch(previous, carrySecrets(listPatch, previous)) as typeof previous;
  assert.deepEqual(replaced.storage.backends, [{
    name: "fast",
    type: "s3",
    endpoint: "http://x",
    secret_access_key: "fast-secret",
    encryption: { key: "ab".repeat(32) },
  }]);
});

Deno.test("carrySecrets does not modify its inputs", () => {
  const before = structuredClone(previous);
  const incoming = redactSecrets(previous) as Record<string, unknown>;
  const incomingBefore = structuredClone(incoming);
  carrySecrets(incoming, previous);
  assert.deepEqual(previous, before);
  assert.deepEqual(incoming, incomingBefore);
});
