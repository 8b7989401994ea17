import assert from "node:assert/strict";
import {
  cookieOf,
  DEFAULT_IP,
  events,
  login,
  startHarness,
  withHarness,
} from "../../../tests/helpers/admin-sessions.ts";
import { fileContains, stringsOf } from "../../../tests/helpers/config-db.ts";

Deno.test("login sets a signed HttpOnly SameSite=Strict Secure cookie and opens a session", async () => {
  await withHarness(async (h) => {
    const response = await h.request("POST", "/_/api/admin/login", { body: { password: h.plain } });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(body, {
      ok: true,
      user: "$bootstrap",
      admin_gui: true,
      expires_at: new Date(h.clock.now + 4 * 3600_000).toISOString(),
    });
    const setCookie = response.headers.get("set-cookie")!;
    assert.match(setCookie, /^svc_session=v2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}; /);
    for (
      const attribute of ["Path=/_/", "HttpOnly", "SameSite=Strict", "Max-Age=14400", "Secure"]
    ) {
      assert.ok(setCookie.split("; ").includes(attribute), `${attribute} in ${setCookie}`);
    }
    const cookie = cookieOf(response)!;

    const echo = await h.request("GET", "/_/api/admin/echo", { cookie });
    assert.equal(echo.status, 200);
    const { principal } = await echo.json();
    assert.equal(principal.user, "$bootstrap");
    assert.equal(principal.admin, true);
    assert.match(principal.sessionId, /^[0-9a-f]{32}$/);

    const session = await h.request("GET", "/_/api/admin/session", { cookie });
    assert.deepEqual(await session.json(), { valid: true, admin_gui: true });
    const whoami = await h.request("GET", "/_/api/whoami", { cookie });
    assert.deepEqual(await whoami.json(), {
      mode: "bootstrap",
      version: "9.9.9",
      user: "$bootstrap",
      external_providers: [],
    });
    const stats = await h.request("GET", "/_/stats", { cookie });
    assert.equal(stats.status, 200);
    const entry = h.ring.snapshot()[0];
    assert.equal(entry.event, "admin_login");
    assert.deepEqual(entry.fields, {
      user: "$bootstrap",
      ip: DEFAULT_IP,
      session: principal.sessionId,
    });
  });
});

Deno.test("without secure_cookies the cookie has no Secure flag", async () => {
  await withHarness(async (h) => {
    const response = await h.request("POST", "/_/api/admin/login", { body: { password: h.plain } });
    const setCookie = response.headers.get("set-cookie")!;
    assert.equal(setCookie.split("; ").includes("Secure"), false);
    assert.ok(setCookie.split("; ").includes("HttpOnly"));
  }, { secureCookies: false });
});

Deno.test("secure_cookies auto: Secure only on a request that came over TLS", async () => {
  await withHarness(async (h) => {
    const flags = async (https: boolean) => {
      const response = await h.request("POST", "/_/api/admin/login", {
        body: { password: h.plain },
        headers: { "x-test-https": String(https) },
      });
      assert.equal(response.status, 200);
      await response.body?.cancel();
      return response.headers.get("set-cookie")!.split("; ");
    };
    assert.equal((await flags(false)).includes("Secure"), false);
    assert.equal((await flags(true)).includes("Secure"), true);
  }, { secureCookies: "auto" });
});

Deno.test("no session: protected routes and stats are 401, public ones answer", async () => {
  await withHarness(async (h) => {
    const echo = await h.request("GET", "/_/api/admin/echo");
    assert.equal(echo.status, 401);
    const body = await echo.json();
    assert.equal(body.error, "unauthorized");
    assert.match(body.message, /Log in first/);
    assert.equal((await h.request("POST", "/_/api/admin/logout")).status, 401);
    assert.equal((await h.request("PUT", "/_/api/admin/password", { body: {} })).status, 401);
    assert.equal((await h.request("GET", "/_/stats")).status, 401);
    const session = await h.request("GET", "/_/api/admin/session");
    assert.equal(session.status, 200);
    assert.deepEqual(await session.json(), { valid: false, admin_gui: false });
    const whoami = await h.request("GET", "/_/api/whoami");
    assert.equal((await whoami.json()).user, null);
    // A public path's look-alike is not public.
    assert.equal((await h.request("GET", "/_/api/admin/session/s3-credentials")).status, 401);
  });
});

Deno.test("wrong password is 401 and audited without the password; bad bodies are 400", async () => {
  await withHarness(async (h) => {
    const response = await h.request("POST", "/_/api/admin/login", {
      body: { password: "guess-1234567" },
    });
    assert.equal(response.status, 401);
    assert.deepEqual(await response.json(), { error: "unauthorized", message: "Wrong password" });
    assert.equal(response.headers.get("set-cookie"), null);
    const entry = h.ring.snapshot()[0];
    assert.equal(entry.event, "admin_login_failed");
    assert.equal(entry.level, "warn");
    assert.equal(JSON.stringify(entry).includes("guess-1234567"), false);
    assert.equal((await h.request("POST", "/_/api/admin/login", { body: {} })).status, 400);
    assert.equal(
      (await h.request("POST", "/_/api/admin/login", { body: { password: 5 } })).status,
      400,
    );
    const notJson = await h.app.request("http://svc.test:9000/_/api/admin/login", {
      method: "POST",
      body: "password=x",
    });
    assert.equal(notJson.status, 400);
  });
});

Deno.test("brute force: 5 failures lock the address out with 429 for 5 minutes", async () => {
  await withHarness(async (h) => {
    for (let i = 0; i < 5; i++) {
      const r = await h.request("POST", "/_/api/admin/login", { body: { password: `wrong-${i}` } });
      assert.equal(r.status, 401);
    }
    // Locked: even the right password is not checked.
    const locked = await h.request("POST", "/_/api/admin/login", { body: { password: h.plain } });
    assert.equal(locked.status, 429);
    const body = await locked.json();
    assert.equal(body.error, "too_many_requests");
    assert.equal(body.retry_after_secs, 300);
    assert.equal(locked.headers.get("retry-after"), "300");
    // Another address is not limited.
    await login(h, h.plain, "10.9.9.9");
    // Recovery and password changes share the limit.
    const recover = await h.request("POST", "/_/api/admin/recover-db", { body: { password: "x" } });
    assert.equal(recover.status, 429);
    h.clock.now += 299_000;
    assert.equal(
      (await h.request("POST", "/_/api/admin/login", { body: { password: h.plain } })).status,
      429,
    );
    h.clock.now += 1_000;
    await login(h);
    assert.deepEqual(
      events(h).filter((e) => e === "admin_login_failed").length,
      5,
    );
  });
});

Deno.test("parallel guesses cannot slip past the limit", async () => {
  await withHarness(async (h) => {
    const answers = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) => h.request("POST", "/_/api/admin/login", { body: { password: `parallel-${i}` } }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 401).length, 5);
    assert.equal(statuses.filter((s) => s === 429).length, 7);
  });
});

Deno.test("logout ends the session and clears the cookie", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const other = await login(h);
    const response = await h.request("POST", "/_/api/admin/logout", { cookie });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("set-cookie")!, /^svc_session=; Path=\/_\/; .*Max-Age=0/);
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 401);
    const session = await h.request("GET", "/_/api/admin/session", { cookie });
    assert.deepEqual(await session.json(), { valid: false, admin_gui: false });
    // Only that session ended.
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie: other })).status, 200);
    assert.ok(events(h).includes("admin_logout"));
  });
});

Deno.test("a session expires after session_ttl_hours", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    h.clock.now += 4 * 3600_000 - 1;
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
    h.clock.now += 1;
    const expired = await h.request("GET", "/_/api/admin/echo", { cookie });
    assert.equal(expired.status, 401);
    assert.match((await expired.json()).message, /invalid or expired/);
    const fresh = await login(h);
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie: fresh })).status, 200);
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 401);
  });
});

Deno.test("a cookie replayed from another address is refused and audited", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const replay = await h.request("GET", "/_/api/admin/echo", { cookie, ip: "203.0.113.7" });
    assert.equal(replay.status, 401);
    const session = await h.request("GET", "/_/api/admin/session", { cookie, ip: "203.0.113.7" });
    assert.deepEqual(await session.json(), { valid: false, admin_gui: false });
    assert.equal((await h.request("GET", "/_/stats", { cookie, ip: "203.0.113.7" })).status, 401);
    const entry = h.ring.snapshot().find((e) => e.event === "admin_session_ip_mismatch");
    assert.equal(entry?.fields.ip, "203.0.113.7");
    // The owner's address still works.
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
  });
});

Deno.test("a tampered cookie is refused", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const [version, token, mac] = cookie.split(".");
    const flip = (text: string, at: number) =>
      text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1);
    const tampered = [
      `${version}.${flip(token, 5)}.${mac}`,
      `${version}.${token}.${flip(mac, 5)}`,
      `v1.${token}.${mac}`,
      `${version}.${token}`,
      `${token}`,
      "",
    ];
    for (const value of tampered) {
      const response = await h.request("GET", "/_/api/admin/echo", { cookie: value });
      assert.equal(response.status, 401, `cookie "${value}"`);
    }
    // The untouched cookie still works.
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
  });
});

Deno.test("cross-site state-changing requests are refused, public ones included", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const cases: Array<[Record<string, string>, number]> = [
      [{ "sec-fetch-site": "cross-site" }, 403],
      [{ "sec-fetch-site": "same-site" }, 403],
      [{ origin: "https://evil.example" }, 403],
      [{ origin: "http://svc.test:9001" }, 403],
      [{ origin: "null" }, 403],
      [{ "sec-fetch-site": "same-origin", origin: "http://svc.test:9000" }, 200],
      [{ "sec-fetch-site": "none" }, 200],
      [{ origin: "http://SVC.test:9000" }, 200],
      [{}, 200],
    ];
    for (const [headers, status] of cases) {
      const response = await h.request("POST", "/_/api/admin/login", {
        body: { password: h.plain },
        headers,
      });
      assert.equal(response.status, status, JSON.stringify(headers));
      if (status === 403) {
        const body = await response.json();
        assert.equal(body.error, "cross_site");
        assert.equal(response.headers.get("set-cookie"), null);
      }
    }
    // With a valid cookie too: a cross-site logout does not end the session.
    const logout = await h.request("POST", "/_/api/admin/logout", {
      cookie,
      headers: { origin: "https://evil.example" },
    });
    assert.equal(logout.status, 403);
    assert.equal((await h.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
    // Reads are not state-changing: a cross-site GET is judged by the session alone.
    const read = await h.request("GET", "/_/api/admin/echo", {
      cookie,
      headers: { "sec-fetch-site": "cross-site" },
    });
    assert.equal(read.status, 200);
    assert.ok(events(h).includes("admin_cross_site_refused"));
  });
});

Deno.test("sessions survive closing and reopening the database", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-sessions-" });
  try {
    const first = await startHarness({ stateDir: `${root}/.svc` });
    const cookie = await login(first);
    await first.close();
    const second = await startHarness({ stateDir: `${root}/.svc`, clock: first.clock });
    assert.equal(second.plain, undefined, "no new password on the second start");
    assert.equal((await second.request("GET", "/_/api/admin/echo", { cookie })).status, 200);
    await second.close();
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the DB file holds no session cookie, password or hash in clear", async () => {
  await withHarness(async (h) => {
    const cookie = await login(h);
    const [, token, mac] = cookie.split(".");
    const password = h.plain!;
    const hash = h.password.hash;
    await h.db.close();
    for (const secret of [cookie, token, mac, password, hash, "$bootstrap", DEFAULT_IP]) {
      assert.equal(await fileContains(h.db.path, secret), false, `"${secret}" in the file`);
    }
    const strings = await stringsOf(h.db.path);
    if (strings !== null) {
      for (const secret of [token.slice(0, 16), mac.slice(0, 16), password, "$bootstrap"]) {
        assert.equal(strings.includes(secret), false, `strings shows "${secret}"`);
      }
    }
  });
});
