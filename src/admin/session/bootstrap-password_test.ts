import assert from "node:assert/strict";
import bcrypt from "bcryptjs";
import { HASH_A, HASH_B } from "../../../tests/helpers/config-db.ts";
import { openConfigDb } from "../../db/config-db.ts";
import { AdminError } from "../admin-error.ts";
import {
  BootstrapPassword,
  HASH_FILE,
  normalizeBcryptHash,
  type ResolveBootstrapOptions,
} from "./bootstrap-password.ts";

const b64 = (text: string) => btoa(text);

async function withStateDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "svc-bootstrap-" });
  try {
    await fn(`${root}/.svc`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

function options(
  stateDir: string,
  extra: Partial<ResolveBootstrapOptions> = {},
): ResolveBootstrapOptions {
  return {
    env: {},
    configHash: undefined,
    stateDir,
    bcryptCost: 4,
    announce: () => {
      throw new Error("nothing should be announced");
    },
    ...extra,
  };
}

Deno.test("plain and base64 forms of $2a$, $2b$, $2y$ hashes are accepted; others are not", () => {
  assert.equal(normalizeBcryptHash(HASH_A), HASH_A);
  assert.equal(normalizeBcryptHash(` ${HASH_A}\n`), HASH_A);
  assert.equal(normalizeBcryptHash(b64(HASH_A)), HASH_A);
  assert.equal(normalizeBcryptHash(b64(HASH_A).replaceAll("=", "")), HASH_A);
  const y = HASH_A.replace("$2b$", "$2y$");
  assert.equal(normalizeBcryptHash(y), y);
  assert.equal(normalizeBcryptHash(HASH_A.replace("$2b$", "$2x$")), null);
  assert.equal(normalizeBcryptHash(HASH_A.replace("$04$", "$03$")), null);
  assert.equal(normalizeBcryptHash(HASH_A.slice(0, -1)), null);
  assert.equal(normalizeBcryptHash("password"), null);
  assert.equal(normalizeBcryptHash(b64("not a hash")), null);
  assert.equal(normalizeBcryptHash(""), null);
});

Deno.test("resolution order: env, legacy env, config, svc's file", async () => {
  await withStateDir(async (dir) => {
    await Deno.mkdir(dir, { recursive: true });
    const fileHash = await bcrypt.hash("from-file", 4);
    await Deno.writeTextFile(`${dir}/${HASH_FILE}`, fileHash + "\n");
    const resolve = (env: Record<string, string>, configHash?: string) =>
      BootstrapPassword.resolve(options(dir, { env, configHash }));

    const env = await resolve({
      SVC_BOOTSTRAP_PASSWORD_HASH: b64(HASH_A),
      SVC_ADMIN_PASSWORD_HASH: HASH_B,
    }, HASH_B);
    assert.equal(env.hash, HASH_A);
    assert.equal(env.source, "env");
    assert.match(env.sourceLabel, /SVC_BOOTSTRAP_PASSWORD_HASH/);

    const legacy = await resolve({ SVC_ADMIN_PASSWORD_HASH: HASH_B }, HASH_A);
    assert.deepEqual([legacy.hash, legacy.source], [HASH_B, "env_legacy"]);

    const config = await resolve({}, b64(HASH_B));
    assert.deepEqual([config.hash, config.source], [HASH_B, "config"]);

    // $2y$ (PHP, htpasswd) and $2a$ hashes verify like $2b$ ones.
    const y = await resolve({}, fileHash.replace("$2b$", "$2y$"));
    assert.equal(await y.verify("from-file"), true);
    assert.equal(await y.verify("from-file!"), false);

    const file = await resolve({});
    assert.deepEqual([file.hash, file.source, file.generated], [fileHash, "state_file", false]);
    assert.equal(await file.verify("from-file"), true);
  });
});

Deno.test("a malformed hash is refused with an error naming its source", async () => {
  await withStateDir(async (dir) => {
    await assert.rejects(
      BootstrapPassword.resolve(options(dir, { env: { SVC_BOOTSTRAP_PASSWORD_HASH: "hunter2" } })),
      /^Error: SVC_BOOTSTRAP_PASSWORD_HASH is not a bcrypt hash .* 7 characters long$/,
    );
    await assert.rejects(
      BootstrapPassword.resolve(options(dir, { env: { SVC_ADMIN_PASSWORD_HASH: "" } })),
      /SVC_ADMIN_PASSWORD_HASH is not a bcrypt hash/,
    );
    await assert.rejects(
      BootstrapPassword.resolve(options(dir, { configHash: "$2b$10$short" })),
      /advanced\.bootstrap_password_hash is not a bcrypt hash/,
    );
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/${HASH_FILE}`, "garbage");
    await assert.rejects(
      BootstrapPassword.resolve(options(dir)),
      /hash file ".*bootstrap-password\.bcrypt" is not a bcrypt hash/,
    );
  });
});

Deno.test("first run: a password is generated, shown once, and only its hash is kept", async () => {
  await withStateDir(async (dir) => {
    const shown: string[] = [];
    const first = await BootstrapPassword.resolve(
      options(dir, { announce: (text) => shown.push(text) }),
    );
    assert.equal(first.generated, true);
    assert.equal(first.source, "state_file");
    assert.equal(shown.length, 1);
    const password = shown[0].match(/^ {4}(\S+)$/m)?.[1];
    assert.ok(password && password.length >= 24, "the banner shows the password");
    assert.match(shown[0], /shown this ONCE/);
    assert.match(shown[0], /PUT \/_\/api\/admin\/password/);
    assert.equal(await first.verify(password), true);
    assert.equal(await first.verify(password + "x"), false);
    assert.equal(await first.verify(""), false);

    const file = `${dir}/${HASH_FILE}`;
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    const stored = await Deno.readTextFile(file);
    assert.equal(stored, first.hash + "\n");
    assert.equal(stored.includes(password), false);

    // The next start reads the file and announces nothing.
    const second = await BootstrapPassword.resolve(options(dir));
    assert.equal(second.hash, first.hash);
    assert.equal(second.generated, false);
  });
});

Deno.test("change is refused (409) when the hash comes from the environment or config", async () => {
  await withStateDir(async (dir) => {
    const rekeyNever = {
      rekey: () => Promise.reject(new Error("must not rekey")),
    };
    for (
      const [extra, where] of [
        [{ env: { SVC_BOOTSTRAP_PASSWORD_HASH: HASH_A } }, /SVC_BOOTSTRAP_PASSWORD_HASH/],
        [{ env: { SVC_ADMIN_PASSWORD_HASH: HASH_A } }, /SVC_ADMIN_PASSWORD_HASH/],
        [{ configHash: HASH_A }, /advanced\.bootstrap_password_hash in the config file/],
      ] as const
    ) {
      const password = await BootstrapPassword.resolve(options(dir, extra));
      await assert.rejects(password.change("a-long-enough-password", rekeyNever), (err) => {
        assert.ok(err instanceof AdminError);
        assert.equal(err.status, 409);
        assert.match(err.message, where);
        return true;
      });
      assert.equal(password.hash, HASH_A);
    }
  });
});

Deno.test("change: weak or over-long passwords are 400; a good one re-encrypts the DB", async () => {
  await withStateDir(async (dir) => {
    const password = await BootstrapPassword.resolve(options(dir, { announce: () => {} }));
    const db = await openConfigDb({ dir, passwordHash: password.hash });
    await db.execute("CREATE TABLE notes (body TEXT)");
    await db.execute("INSERT INTO notes VALUES ('kept')");
    for (const weak of ["short", "elevenchars", "é".repeat(40)]) {
      await assert.rejects(password.change(weak, db), (err) => {
        assert.ok(err instanceof AdminError);
        assert.equal(err.status, 400);
        return true;
      });
    }
    const oldHash = password.hash;
    await password.change("twelve chars", db);
    assert.notEqual(password.hash, oldHash);
    assert.equal(await password.verify("twelve chars"), true);
    assert.equal((await Deno.readTextFile(`${dir}/${HASH_FILE}`)).trim(), password.hash);
    await db.close();

    // A restart reads the new hash and opens the re-encrypted database with it.
    const restarted = await BootstrapPassword.resolve(options(dir));
    assert.equal(restarted.hash, password.hash);
    const reopened = await openConfigDb({ dir, passwordHash: restarted.hash });
    assert.deepEqual(reopened.state, { status: "ok" });
    const rows = await reopened.execute("SELECT body FROM notes");
    assert.equal(rows.rows[0].body, "kept");
    await reopened.close();
  });
});

Deno.test("change whose rekey fails keeps the old password and hash file", async () => {
  await withStateDir(async (dir) => {
    const password = await BootstrapPassword.resolve(options(dir, { announce: () => {} }));
    const before = await Deno.readTextFile(`${dir}/${HASH_FILE}`);
    const failing = { rekey: () => Promise.reject(new Error("disk full")) };
    await assert.rejects(password.change("a-long-enough-password", failing), /disk full/);
    assert.equal(await Deno.readTextFile(`${dir}/${HASH_FILE}`), before);
    assert.equal(password.hash, before.trim());
  });
});
