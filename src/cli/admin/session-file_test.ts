import assert from "node:assert/strict";
import { readSession, removeSession, sessionPath, writeSession } from "./session-file.ts";
import { AdminCliError } from "./exit-codes.ts";

const SESSION = {
  server: "http://127.0.0.1:9000/",
  cookie: "svc_session=abc",
  user: "$bootstrap",
  expires_at: null,
  created_at: "2026-11-28T00:00:00.000Z",
};

Deno.test("sessionPath: flag, then SVC_ADMIN_SESSION_FILE, XDG_CONFIG_HOME, HOME", () => {
  const env = { SVC_ADMIN_SESSION_FILE: "/e/s.json", XDG_CONFIG_HOME: "/x", HOME: "/h" };
  assert.equal(sessionPath(env, "/f.json"), "/f.json");
  assert.equal(sessionPath(env, undefined), "/e/s.json");
  assert.equal(
    sessionPath({ XDG_CONFIG_HOME: "/x", HOME: "/h" }, undefined),
    "/x/svc/admin-session.json",
  );
  assert.equal(sessionPath({ HOME: "/h" }, undefined), "/h/.config/svc/admin-session.json");
  assert.throws(() => sessionPath({}, undefined), AdminCliError);
});

Deno.test("writeSession creates 0600 in a 0700 folder; a wider file is narrowed on read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-session-test-" });
  try {
    const path = `${dir}/nested/admin-session.json`;
    await writeSession(path, SESSION);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/nested`)).mode! & 0o777, 0o700);
    const warnings: string[] = [];
    assert.deepEqual(await readSession(path, (l) => warnings.push(l)), SESSION);
    assert.equal(warnings.length, 0);

    await Deno.chmod(path, 0o644);
    assert.deepEqual(await readSession(path, (l) => warnings.push(l)), SESSION);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.match(warnings.join("\n"), /was mode 644; narrowed to 600/);

    // Overwriting keeps 0600 and leaves no temporary file.
    await writeSession(path, { ...SESSION, user: "alice" });
    assert.equal((await readSession(path, () => {}))?.user, "alice");
    assert.deepEqual([...Deno.readDirSync(`${dir}/nested`)].map((e) => e.name), [
      "admin-session.json",
    ]);

    await Deno.writeTextFile(path, "{not json");
    await assert.rejects(() => readSession(path, () => {}), /not readable JSON/);
    assert.equal(await removeSession(path), true);
    assert.equal(await removeSession(path), false);
    assert.equal(await readSession(path, () => {}), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
