import assert from "node:assert/strict";
import { parse } from "yaml";
import { IamError } from "../iam/model.ts";
import type { IamSnapshotData } from "../iam/model.ts";
import {
  backupParts,
  CONFIG_PART,
  IAM_PART,
  importFromLegacyJson,
  importFromParts,
  SECRETS_PART,
} from "./backup-parts.ts";

const PERMS = [{ effect: "Allow" as const, actions: ["read" as const], resources: ["b"] }];

const snapshot: IamSnapshotData = {
  version: 3,
  users: [{
    id: "u1",
    name: "alice",
    access_key_id: "AKALICE0001",
    secret_access_key: "alice-secret-000001",
    has_secret: true,
    enabled: false,
    auth_source: "local",
    groups: ["readers"],
    permissions: PERMS,
    created_at: 1,
    updated_at: 2,
  }],
  groups: [{
    id: "g1",
    name: "readers",
    description: "read b",
    permissions: PERMS,
    members: ["alice"],
    created_at: 1,
    updated_at: 2,
  }],
};

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const enc = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function asMap(parts: { name: string; bytes: Uint8Array }[]): Map<string, Uint8Array> {
  return new Map(parts.map((p) => [p.name, p.bytes]));
}

function invalid(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof IamError && err.kind === "invalid", String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

Deno.test("backupParts: config as YAML with secrets, iam.json without secrets, secrets.json", () => {
  const document = { access: { access_key_id: "BOOT", secret_access_key: "${env:SECRET}" } };
  const parts = asMap(backupParts(snapshot, document));
  assert.deepEqual([...parts.keys()], [CONFIG_PART, IAM_PART, SECRETS_PART]);
  assert.deepEqual(parse(text(parts.get(CONFIG_PART)!)), document);
  const iam = text(parts.get(IAM_PART)!);
  assert.equal(iam.includes("alice-secret-000001"), false);
  assert.deepEqual(JSON.parse(iam).users[0], {
    name: "alice",
    access_key_id: "AKALICE0001",
    enabled: false,
    auth_source: "local",
    groups: ["readers"],
    permissions: PERMS,
  });
  assert.deepEqual(JSON.parse(text(parts.get(SECRETS_PART)!)), {
    iam_user_secrets: { alice: "alice-secret-000001" },
  });
});

Deno.test("importFromParts reads back what backupParts wrote", () => {
  const { iam, ignoredParts } = importFromParts(asMap(backupParts(snapshot, {})));
  assert.deepEqual(ignoredParts, []);
  assert.deepEqual(iam.users, [{
    name: "alice",
    access_key_id: "AKALICE0001",
    secret_access_key: "alice-secret-000001",
    enabled: false,
    auth_source: "local",
    groups: ["readers"],
    permissions: PERMS,
  }]);
  assert.deepEqual(iam.groups, [{ name: "readers", description: "read b", permissions: PERMS }]);
  assert.equal(iam.externalIdentities, 0);
  assert.deepEqual(iam.warnings, []);
});

Deno.test("optional content of later builds is reported, never silently dropped", () => {
  const parts = asMap(backupParts(snapshot, {}));
  const iam = JSON.parse(text(parts.get(IAM_PART)!));
  iam.external_identities = [{ user: "alice", provider: "google", subject: "1" }];
  iam.auth_providers = [{ name: "google" }];
  parts.set(IAM_PART, enc(iam));
  parts.set("jobs.json", enc({}));
  const imported = importFromParts(parts);
  assert.equal(imported.iam.externalIdentities, 1);
  assert.deepEqual(imported.iam.warnings, [
    "1 auth_providers in the backup were not restored (not in this build)",
  ]);
  assert.deepEqual(imported.ignoredParts, ["jobs.json"]);
});

Deno.test("an inconsistent backup is refused naming the record", () => {
  const parts = () => asMap(backupParts(snapshot, {}));
  const withIam = (iam: unknown) => {
    const p = parts();
    p.set(IAM_PART, enc(iam));
    return p;
  };
  const user = { name: "alice", access_key_id: "AKALICE0001" };
  invalid(() => importFromParts(new Map()), /no iam.json part/);
  const noSecrets = parts();
  noSecrets.set(SECRETS_PART, enc({ iam_user_secrets: {} }));
  invalid(() => importFromParts(noSecrets), /User "alice" has no secret access key/);
  invalid(() => importFromParts(withIam({ users: [user, user] })), /lists user "alice" twice/);
  invalid(
    () => importFromParts(withIam({ users: [{ ...user, permissions: [{ actions: ["fly"] }] }] })),
    /fly/,
  );
  invalid(() => importFromParts(withIam({ users: {} })), /users must be a list/);
  const p = parts();
  p.set(IAM_PART, new TextEncoder().encode("{"));
  invalid(() => importFromParts(p), /iam.json is not valid JSON/);
});

Deno.test("legacy JSON: secrets inline, memberships on groups merged into users", () => {
  const imported = importFromLegacyJson({
    users: [
      { name: "a", access_key_id: "KEYA001", secret_access_key: "secret-a-001" },
      { name: "b", access_key_id: "KEYB001", secret_access_key: "secret-b-001", groups: ["g"] },
    ],
    groups: [{ name: "g", members: ["a", "b"] }],
  });
  assert.deepEqual(imported.users.map((u) => [u.name, u.groups, u.enabled]), [
    ["a", ["g"], true],
    ["b", ["g"], true],
  ]);
  assert.deepEqual(imported.groups, [{ name: "g", description: "", permissions: [] }]);
  invalid(() => importFromLegacyJson({ nothing: true }), /"users" and\/or "groups"/);
  invalid(
    () => importFromLegacyJson({ users: [], groups: [{ name: "g", members: ["ghost"] }] }),
    /member "ghost", who is not in the backup/,
  );
  invalid(
    () =>
      importFromLegacyJson({
        users: [
          { name: "a", access_key_id: "SAME001", secret_access_key: "secret-a-001" },
          { name: "b", access_key_id: "SAME001", secret_access_key: "secret-b-001" },
        ],
      }),
    /access key id "SAME001" twice/,
  );
});
