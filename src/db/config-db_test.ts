import assert from "node:assert/strict";
import {
  fileContains,
  HASH_A,
  HASH_B,
  rawQuery,
  stringsOf,
  thrownCode,
} from "../../tests/helpers/config-db.ts";
import { type ConfigDb, openConfigDb } from "./config-db.ts";
import { listAside, REKEY_FILE } from "./db-files.ts";
import { configDbKey } from "./db-key.ts";
import { latestVersion, MIGRATIONS } from "./migrations.ts";

const SECRET = "PLAINTEXT-MARKER-4f1c9e";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "svc-db-" });
  try {
    await fn(`${root}/.svc`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function seed(db: ConfigDb, value = SECRET): Promise<void> {
  await db.execute("CREATE TABLE IF NOT EXISTS notes (body TEXT)");
  await db.execute({ sql: "INSERT INTO notes (body) VALUES (?)", args: [value] });
}

async function notes(db: ConfigDb): Promise<string[]> {
  const exists = await db.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'notes'",
  );
  if (exists.rows.length === 0) return [];
  return (await db.execute("SELECT body FROM notes ORDER BY rowid")).rows.map((r) =>
    String(r.body)
  );
}

Deno.test("open creates a 0700 dir and a 0600 encrypted file at the latest schema", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    assert.deepEqual(db.state, { status: "ok" });
    assert.equal(await db.schemaVersion(), latestVersion(MIGRATIONS));
    await seed(db);
    await db.close();
    assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(`${dir}/config.db`)).mode! & 0o777, 0o600);
    assert.equal(await fileContains(`${dir}/config.db`, SECRET), false);
    assert.equal(await fileContains(`${dir}/config.db`, "CREATE TABLE"), false);
    const strings = await stringsOf(`${dir}/config.db`);
    if (strings !== null) {
      for (const needle of [SECRET, "sessions", "schema_migrations", "SQLite format"]) {
        assert.equal(strings.includes(needle), false, `strings shows "${needle}"`);
      }
    }
    // The derived key reads it; no key and another key do not.
    const rows = await rawQuery(`${dir}/config.db`, configDbKey(HASH_A), "SELECT body FROM notes");
    assert.deepEqual(rows, [{ body: SECRET }]);
    const noKey = () => rawQuery(`${dir}/config.db`, undefined, "SELECT * FROM notes");
    assert.equal(await thrownCode(noKey), "SQLITE_NOTADB");
    const otherKey = () => rawQuery(`${dir}/config.db`, configDbKey(HASH_B), "SELECT * FROM notes");
    assert.equal(await thrownCode(otherKey), "SQLITE_NOTADB");
  });
});

Deno.test("reopening with the same hash keeps the rows and does not migrate again", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(db);
    await db.close();
    const again = await openConfigDb({ dir, passwordHash: HASH_A });
    assert.deepEqual(await notes(again), [SECRET]);
    const applied = await again.execute("SELECT COUNT(*) AS n FROM schema_migrations");
    assert.equal(Number(applied.rows[0].n), MIGRATIONS.length);
    await again.close();
  });
});

Deno.test("a new migration appended to the list runs at the next open, once", async () => {
  await withDir(async (dir) => {
    await (await openConfigDb({ dir, passwordHash: HASH_A })).close();
    const next = [...MIGRATIONS, {
      version: MIGRATIONS.length + 1,
      name: "widgets",
      sql: ["CREATE TABLE widgets (id INTEGER PRIMARY KEY)"],
    }];
    const db = await openConfigDb({ dir, passwordHash: HASH_A, migrations: next });
    assert.equal(await db.schemaVersion(), MIGRATIONS.length + 1);
    await db.execute("INSERT INTO widgets (id) VALUES (1)");
    await db.close();
    // The older build refuses the newer database instead of misreading it.
    await assert.rejects(
      openConfigDb({ dir, passwordHash: HASH_A }),
      new RegExp(
        `schema is v${
          MIGRATIONS.length + 1
        }, newer than this build supports \\(v${MIGRATIONS.length}\\)`,
      ),
    );
  });
});

Deno.test("a failing migration is rolled back whole and not recorded", async () => {
  await withDir(async (dir) => {
    await (await openConfigDb({ dir, passwordHash: HASH_A })).close();
    const broken = [...MIGRATIONS, {
      version: MIGRATIONS.length + 1,
      name: "broken",
      sql: ["CREATE TABLE half (id INTEGER)", "THIS IS NOT SQL"],
    }];
    await assert.rejects(openConfigDb({ dir, passwordHash: HASH_A, migrations: broken }));
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    assert.equal(await db.schemaVersion(), MIGRATIONS.length);
    const half = await db.execute("SELECT name FROM sqlite_master WHERE name = 'half'");
    assert.equal(half.rows.length, 0);
    await db.close();
  });
});

Deno.test("wrong hash: the file is moved aside, a fresh DB runs in mismatch state", async () => {
  await withDir(async (dir) => {
    const first = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(first);
    await first.close();
    const original = await Deno.readFile(`${dir}/config.db`);

    const wrong = await openConfigDb({
      dir,
      passwordHash: HASH_B,
      now: () => Date.UTC(2026, 0, 2),
    });
    assert.equal(wrong.state.status, "mismatch");
    const asidePath = (wrong.state as { asidePath: string }).asidePath;
    assert.equal(asidePath, `${dir}/config.db.mismatch-20260102T000000000Z`);
    assert.deepEqual(await Deno.readFile(asidePath), original);
    assert.deepEqual(await notes(wrong), []);
    await wrong.close();

    // A restart with the same wrong hash remembers the pending recovery.
    const again = await openConfigDb({ dir, passwordHash: HASH_B });
    assert.deepEqual(again.state, { status: "mismatch", asidePath });
    assert.deepEqual(await again.acknowledgeRecovery(), { asidePath });
    assert.deepEqual(again.state, { status: "ok" });
    await assert.rejects(again.acknowledgeRecovery(), /No config database recovery is pending/);
    await again.close();
    const recovered = await openConfigDb({ dir, passwordHash: HASH_B });
    assert.deepEqual(recovered.state, { status: "ok" });
    await recovered.close();
    assert.deepEqual(await Deno.readFile(asidePath), original);
  });
});

Deno.test("the right hash later restores the aside file and moves the fresh one aside", async () => {
  await withDir(async (dir) => {
    const first = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(first);
    await first.close();
    let clock = Date.UTC(2026, 0, 2);
    const wrong = await openConfigDb({ dir, passwordHash: HASH_B, now: () => clock });
    await seed(wrong, "written-under-the-wrong-hash");
    await wrong.close();

    clock += 1000;
    const right = await openConfigDb({ dir, passwordHash: HASH_A, now: () => clock });
    assert.deepEqual(right.state, { status: "ok" });
    assert.deepEqual(await notes(right), [SECRET]);
    await right.close();
    // Nothing was deleted: the database written under the wrong hash is aside now.
    const aside = await listAside(dir);
    assert.deepEqual(aside, [`${dir}/config.db.mismatch-20260102T000001000Z`]);
    const rows = await rawQuery(aside[0], configDbKey(HASH_B), "SELECT body FROM notes");
    assert.deepEqual(rows, [{ body: "written-under-the-wrong-hash" }]);
  });
});

Deno.test("an open error that is not a wrong key fails loudly and moves nothing", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/config.db`, { recursive: true });
    await assert.rejects(
      openConfigDb({ dir, passwordHash: HASH_A }),
      /Cannot open config database ".*config\.db"/,
    );
    assert.deepEqual(await listAside(dir), []);
    assert.equal((await Deno.stat(`${dir}/config.db`)).isDirectory, true);
  });
});

Deno.test("rekey re-encrypts: old key fails, new key reads the rows, no plaintext", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(db);
    const seen: string[] = [];
    await db.rekey(HASH_B, async () => {
      // The commit point: the copy is durable and opens with the new key; the live file still
      // opens with the old one.
      seen.push("commit");
      const copy = await rawQuery(
        `${dir}/${REKEY_FILE}`,
        configDbKey(HASH_B),
        "SELECT * FROM notes",
      );
      assert.deepEqual(copy, [{ body: SECRET }]);
      const live = await rawQuery(`${dir}/config.db`, configDbKey(HASH_A), "SELECT * FROM notes");
      assert.deepEqual(live, [{ body: SECRET }]);
    });
    assert.deepEqual(seen, ["commit"]);
    assert.deepEqual(await notes(db), [SECRET]);
    await seed(db, "after-rekey");
    await db.close();
    const path = `${dir}/config.db`;
    assert.equal(
      await thrownCode(() => rawQuery(path, configDbKey(HASH_A), "SELECT 1 FROM notes")),
      "SQLITE_NOTADB",
    );
    assert.deepEqual(await rawQuery(path, configDbKey(HASH_B), "SELECT body FROM notes"), [
      { body: SECRET },
      { body: "after-rekey" },
    ]);
    assert.equal(await fileContains(path, SECRET), false);
    assert.equal(await fileContains(path, "after-rekey"), false);
    assert.equal(await Deno.lstat(`${dir}/${REKEY_FILE}`).then(() => true, () => false), false);
    const reopened = await openConfigDb({ dir, passwordHash: HASH_B });
    assert.deepEqual(reopened.state, { status: "ok" });
    await reopened.close();
  });
});

Deno.test("rekey whose hash commit fails changes nothing", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(db);
    await assert.rejects(
      db.rekey(HASH_B, () => Promise.reject(new Error("disk full"))),
      /disk full/,
    );
    assert.deepEqual(await notes(db), [SECRET]);
    await db.close();
    assert.equal(await Deno.lstat(`${dir}/${REKEY_FILE}`).then(() => true, () => false), false);
    const again = await openConfigDb({ dir, passwordHash: HASH_A });
    assert.deepEqual(again.state, { status: "ok" });
    assert.deepEqual(await notes(again), [SECRET]);
    await again.close();
  });
});

/** Copies the directory's files as they are at this instant (a crash right here). */
async function snapshot(dir: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile) await Deno.copyFile(`${dir}/${entry.name}`, `${to}/${entry.name}`);
  }
}

Deno.test("a crash at the rekey commit point recovers to the hash that was stored", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await seed(db);
    const beforeCommit = `${dir}-crash-before`;
    const afterCommit = `${dir}-crash-after`;
    await db.rekey(HASH_B, async () => {
      await snapshot(dir, beforeCommit);
      await snapshot(dir, afterCommit); // the same files; the stored hash decides
    });
    await db.close();
    try {
      // Crash before the new hash was stored: the old hash opens the old file, the copy goes.
      const old = await openConfigDb({ dir: beforeCommit, passwordHash: HASH_A });
      assert.deepEqual(old.state, { status: "ok" });
      assert.deepEqual(await notes(old), [SECRET]);
      await old.close();
      assert.equal(await Deno.lstat(`${beforeCommit}/${REKEY_FILE}`).then(() => 1, () => 0), 0);
      assert.deepEqual(await listAside(beforeCommit), []);

      // Crash after the new hash was stored, before the swap: the boot completes the swap.
      const completed = await openConfigDb({ dir: afterCommit, passwordHash: HASH_B });
      assert.deepEqual(completed.state, { status: "ok" });
      assert.deepEqual(await notes(completed), [SECRET]);
      await completed.close();
      assert.equal(await Deno.lstat(`${afterCommit}/${REKEY_FILE}`).then(() => 1, () => 0), 0);
      assert.deepEqual(await listAside(afterCommit), []);
      const path = `${afterCommit}/config.db`;
      const oldKey = () => rawQuery(path, configDbKey(HASH_A), "SELECT * FROM notes");
      assert.equal(await thrownCode(oldKey), "SQLITE_NOTADB");
    } finally {
      await Deno.remove(beforeCommit, { recursive: true });
      await Deno.remove(afterCommit, { recursive: true });
    }
  });
});

Deno.test("a rekey while queries run: every query succeeds and every write is kept", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await db.execute("CREATE TABLE counter (n INTEGER)");
    let stop = false;
    let written = 0;
    const writer = async (id: number) => {
      while (!stop) {
        await db.execute({ sql: "INSERT INTO counter (n) VALUES (?)", args: [id] });
        written++;
        await db.transaction(async (tx) => {
          await tx.execute("SELECT COUNT(*) FROM counter");
          await new Promise((r) => setTimeout(r, 1));
        });
        await new Promise((r) => setTimeout(r, 0));
      }
    };
    const writers = [1, 2, 3, 4].map(writer);
    await new Promise((r) => setTimeout(r, 30));
    await db.rekey(HASH_B, () => Promise.resolve());
    const atRekey = written;
    await new Promise((r) => setTimeout(r, 30));
    stop = true;
    await Promise.all(writers);
    assert.ok(
      atRekey > 0 && written > atRekey,
      `writes before (${atRekey}) and after (${written})`,
    );
    const count = await db.execute("SELECT COUNT(*) AS n FROM counter");
    assert.equal(Number(count.rows[0].n), written);
    await db.close();
    const rows = await rawQuery(
      `${dir}/config.db`,
      configDbKey(HASH_B),
      "SELECT COUNT(*) AS n FROM counter",
    );
    assert.equal(Number(rows[0].n), written);
  });
});

Deno.test("ping answers while open and fails once closed", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    await db.ping(1000);
    await db.close();
    await assert.rejects(db.ping(1000), /closed/);
  });
});

Deno.test("ping is bounded: a call holding the database makes it fail in time", async () => {
  await withDir(async (dir) => {
    const db = await openConfigDb({ dir, passwordHash: HASH_A });
    let release!: () => void;
    const held = db.transaction(() => new Promise<void>((resolve) => release = resolve));
    await assert.rejects(db.ping(50), /did not answer within 50 ms/);
    release();
    await held;
    await db.ping(1000);
    await db.close();
  });
});
