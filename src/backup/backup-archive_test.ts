import assert from "node:assert/strict";
import { strFromU8, strToU8, unzipSync, zipSync } from "fflate";
import {
  BACKUP_FORMAT_VERSION,
  type BackupPart,
  openBackup,
  parseManifest,
  sha256Hex,
  writeBackup,
} from "./backup-archive.ts";
import { BackupFormatError } from "./backup-zip.ts";

const LIMITS = { maxEntryBytes: 1 << 20, maxTotalBytes: 4 << 20, maxEntries: 16 };
const PASSWORD = "a long enough backup password";
const created = new Date("2026-01-02T03:04:05Z");

const parts = (): BackupPart[] => [
  { name: "iam.json", bytes: strToU8('{"users":[],"groups":[]}') },
  { name: "secrets.json", bytes: strToU8('{"iam_user_secrets":{"a":"s3cr3t-value"}}') },
];

async function archive(password?: string): Promise<Uint8Array> {
  const { stream } = await writeBackup(parts(), {
    svcVersion: "9.9.9",
    createdAt: created,
    password,
    iterations: 1000,
  });
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function refused(zip: Uint8Array, pattern: RegExp, password?: string): Promise<void> {
  await assert.rejects(openBackup(zip, { limits: LIMITS, password }), (err: unknown) => {
    assert.ok(err instanceof BackupFormatError, String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

function edit(zip: Uint8Array, fn: (files: Record<string, Uint8Array>) => void): Uint8Array {
  const files = unzipSync(zip);
  fn(files);
  return zipSync(files);
}

Deno.test("a backup opens to its parts; the manifest records sha256 and size of each", async () => {
  const zip = await archive();
  const opened = await openBackup(zip, { limits: LIMITS });
  assert.deepEqual([...opened.parts.keys()], ["iam.json", "secrets.json"]);
  assert.deepEqual(opened.parts.get("secrets.json"), parts()[1].bytes);
  assert.equal(opened.manifest.format_version, BACKUP_FORMAT_VERSION);
  assert.equal(opened.manifest.svc_version, "9.9.9");
  assert.equal(opened.manifest.created_at, "2026-01-02T03:04:05.000Z");
  assert.equal(opened.manifest.encryption, null);
  assert.deepEqual(opened.manifest.parts["iam.json"], {
    sha256: await sha256Hex(parts()[0].bytes),
    size: parts()[0].bytes.byteLength,
  });
  // manifest.json comes first in the zip.
  assert.equal(Object.keys(unzipSync(zip))[0], "manifest.json");
});

Deno.test("every mismatch with the manifest is refused before any part is handed out", async () => {
  const zip = await archive();
  await refused(
    edit(zip, (f) => f["iam.json"] = strToU8('{"users":[{"name":"x"}]}')),
    /Part "iam.json" does not match/,
  );
  await refused(edit(zip, (f) => delete f["secrets.json"]), /lists part "secrets.json"/);
  await refused(edit(zip, (f) => f["extra.txt"] = strToU8("x")), /"extra.txt", which the manifest/);
  await refused(edit(zip, (f) => delete f["manifest.json"]), /no manifest.json/);
  await refused(
    edit(zip, (f) => {
      const manifest = JSON.parse(strFromU8(f["manifest.json"]));
      manifest.parts["iam.json"].size += 1;
      f["manifest.json"] = strToU8(JSON.stringify(manifest));
    }),
    /Part "iam.json" does not match/,
  );
  await refused(
    edit(zip, (f) => {
      const manifest = JSON.parse(strFromU8(f["manifest.json"]));
      manifest.format_version = BACKUP_FORMAT_VERSION + 1;
      f["manifest.json"] = strToU8(JSON.stringify(manifest));
    }),
    /format version 2; this build reads up to 1/,
  );
});

Deno.test("parseManifest names what is wrong with a manifest", () => {
  const bad = (value: unknown, pattern: RegExp) =>
    assert.throws(() => parseManifest(strToU8(JSON.stringify(value))), pattern);
  assert.throws(() => parseManifest(strToU8("{")), /not valid JSON/);
  bad({ format: "other" }, /does not describe an svc backup/);
  bad({ format: "svc-backup", format_version: "1" }, /no valid format_version/);
  bad({ format: "svc-backup", format_version: 1 }, /no parts object/);
  bad({ format: "svc-backup", format_version: 1, parts: { a: { sha256: "xyz", size: 1 } } }, /"a"/);
  const sha256 = "0".repeat(64);
  for (const name of ["__proto__", "../etc/passwd", "a/b", ""]) {
    bad(
      { format: "svc-backup", format_version: 1, parts: { [name]: { sha256, size: 1 } } },
      /named/,
    );
  }
  bad(
    { format: "svc-backup", format_version: 1, encryption: { algorithm: "ROT13" }, parts: {} },
    /encryption block/,
  );
});

Deno.test("an encrypted backup hides its parts and opens only with its password", async () => {
  const zip = await archive(PASSWORD);
  const files = unzipSync(zip);
  const manifest = JSON.parse(strFromU8(files["manifest.json"]));
  assert.equal(manifest.encryption.kdf, "PBKDF2-SHA256");
  assert.equal(manifest.encryption.iterations, 1000);
  assert.equal(strFromU8(files["secrets.json"], true).includes("s3cr3t-value"), false);
  assert.equal(manifest.parts["secrets.json"].sha256, await sha256Hex(files["secrets.json"]));

  const opened = await openBackup(zip, { limits: LIMITS, password: PASSWORD });
  assert.deepEqual(opened.parts.get("secrets.json"), parts()[1].bytes);
  await refused(zip, /encrypted: send its password/);
  await refused(zip, /does not decrypt: wrong password/, "another long password");
});

Deno.test("encrypted parts are bound to their names: swapping two parts fails to decrypt", async () => {
  const zip = await archive(PASSWORD);
  const swapped = edit(zip, (f) => {
    const manifest = JSON.parse(strFromU8(f["manifest.json"]));
    [f["iam.json"], f["secrets.json"]] = [f["secrets.json"], f["iam.json"]];
    [manifest.parts["iam.json"], manifest.parts["secrets.json"]] = [
      manifest.parts["secrets.json"],
      manifest.parts["iam.json"],
    ];
    f["manifest.json"] = strToU8(JSON.stringify(manifest));
  });
  await refused(swapped, /does not decrypt/, PASSWORD);
});
