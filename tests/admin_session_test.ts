/**
 * Admin sessions as a browser and an attacker meet them on the real server: login, cookie flags,
 * logout, expiry, IP binding, brute-force limiting, cross-site writes, and sessions surviving a
 * restart.
 */
import assert from "node:assert/strict";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { startSvc } from "./helpers/svc.ts";

Deno.test("admin session: login, cookie flags, whoami, logout; routes need a session", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  const anonymous = await admin.request("GET", "/config");
  assert.equal(anonymous.status, 401);
  assert.equal((await anonymous.json()).error, "unauthorized");
  assert.deepEqual(await admin.json("GET", "/session"), { valid: false, admin_gui: false });

  const wrong = await admin.request("POST", "/login", { password: "not-the-password" });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  assert.equal(admin.cookie, null);

  const scrape = await (await fetch(`${svc.url}/_/metrics`)).text();
  assert.match(
    scrape,
    /svc_admin_requests_total\{area="login",method="POST",status="401"\} 1/,
    "admin requests are counted by area",
  );
  const login = await admin.login();
  const setCookie = login.headers.get("set-cookie") ?? "";
  assert.match(setCookie, /^svc_session=/);
  assert.match(setCookie, /HttpOnly/i);
  assert.match(setCookie, /SameSite=Strict/i);
  assert.doesNotMatch(setCookie, /Secure/i, "secure_cookies auto: no Secure over plain HTTP");
  assert.match(setCookie, /Path=\/_\//);
  assert.deepEqual(await admin.json("GET", "/session"), { valid: true, admin_gui: true });
  const whoami = await admin.json("GET", "/_/api/whoami");
  assert.equal(whoami.user, "$bootstrap");
  assert.equal(typeof whoami.version, "string");
  assert.equal(typeof whoami.mode, "string");
  assert.deepEqual(whoami.external_providers, []);
  assert.equal((await admin.request("GET", "/config")).status, 200);

  const audit = JSON.stringify(await admin.json("GET", "/audit"));
  assert.match(audit, /admin_login_failed/);
  assert.match(audit, /admin_login"/);
  const stolen = admin.cookie;
  await admin.json("POST", "/logout");
  assert.equal(admin.cookie, null);
  const replayed = await fetch(`${svc.url}/_/api/admin/config`, {
    headers: { cookie: stolen! },
  });
  assert.equal(replayed.status, 401, "a logged-out cookie is dead");
  await replayed.body?.cancel();
  assert.ok(!audit.includes(ADMIN_PASSWORD), "the password never reaches the audit ring");
});

Deno.test("admin session: a cookie replayed from another address is refused", async () => {
  await using svc = await startSvc({ env: { SVC_TRUST_PROXY_HEADERS: "true" } });
  const admin = new AdminClient(svc.url);
  admin.headers["x-forwarded-for"] = "192.0.2.10";
  await admin.login();
  assert.equal((await admin.request("GET", "/config")).status, 200);
  admin.headers["x-forwarded-for"] = "198.51.100.7";
  const moved = await admin.request("GET", "/config");
  assert.equal(moved.status, 401);
  await moved.body?.cancel();
  admin.headers["x-forwarded-for"] = "192.0.2.10";
  const back = await admin.request("GET", "/config");
  assert.equal(back.status, 200, "the session itself is intact for its own address");
  await back.body?.cancel();
});

Deno.test("admin session: repeated wrong passwords are limited per address (429, Retry-After)", async () => {
  await using svc = await startSvc({ env: { SVC_TRUST_PROXY_HEADERS: "true" } });
  const attacker = new AdminClient(svc.url);
  attacker.headers["x-forwarded-for"] = "203.0.113.5";
  let limited: Response | null = null;
  for (let i = 0; i < 10 && limited === null; i++) {
    const response = await attacker.request("POST", "/login", { password: `guess-${i}` });
    if (response.status === 429) limited = response;
    else {
      assert.equal(response.status, 401);
      await response.body?.cancel();
    }
  }
  assert.ok(limited, "the address is limited within ten guesses");
  assert.ok(Number(limited.headers.get("retry-after")) > 0);
  assert.equal((await limited.json()).error, "too_many_requests");
  const right = await attacker.request("POST", "/login", { password: ADMIN_PASSWORD });
  assert.equal(right.status, 429, "even the right password waits out the limit");
  await right.body?.cancel();
  // Another address is not affected.
  const operator = new AdminClient(svc.url);
  operator.headers["x-forwarded-for"] = "192.0.2.44";
  await operator.login();
});

Deno.test("admin session: cross-site writes are refused, same-origin and CLI calls pass", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const yaml = "advanced:\n  max_delta_ratio: 0.4\n";
  const fromEvil = await admin.request("POST", "/config/validate", { yaml }, {
    origin: "https://evil.example",
  });
  assert.equal(fromEvil.status, 403);
  assert.equal((await fromEvil.json()).error, "cross_site");
  const fetchSite = await admin.request("POST", "/config/validate", { yaml }, {
    "sec-fetch-site": "cross-site",
  });
  assert.equal(fetchSite.status, 403);
  await fetchSite.body?.cancel();
  const loginCsrf = await fetch(`${svc.url}/_/api/admin/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: "https://evil.example" },
    body: JSON.stringify({ password: ADMIN_PASSWORD }),
  });
  assert.equal(loginCsrf.status, 403, "login CSRF is refused too");
  await loginCsrf.body?.cancel();
  const host = new URL(svc.url).host;
  const sameOrigin = await admin.request("POST", "/config/validate", { yaml }, {
    origin: `http://${host}`,
    "sec-fetch-site": "same-origin",
  });
  assert.equal(sameOrigin.status, 200, await sameOrigin.text());
});

Deno.test("admin session: sessions survive a restart until they expire", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-admin-session-" });
  // 0.02 h = 72 s: long enough for a restart on a loaded machine.
  let svc = await startSvc({ dataDir, env: { SVC_SESSION_TTL_HOURS: "0.02" } });
  try {
    const admin = new AdminClient(svc.url);
    await admin.login();
    await svc.stop();
    svc = await startSvc({ dataDir, env: { SVC_SESSION_TTL_HOURS: "0.02" } });
    const again = new AdminClient(svc.url);
    again.cookie = admin.cookie;
    assert.deepEqual(await again.json("GET", "/session"), { valid: true, admin_gui: true });
  } finally {
    await svc.stop();
  }
});

Deno.test("admin session: an expired session is refused with 401", async () => {
  // 0.0005 h = 1.8 s; nothing between the login and the wait depends on the machine's speed.
  await using svc = await startSvc({ env: { SVC_SESSION_TTL_HOURS: "0.0005" } });
  const admin = new AdminClient(svc.url);
  await admin.login();
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const expired = await admin.request("GET", "/config");
  assert.equal(expired.status, 401);
  await expired.body?.cancel();
});
