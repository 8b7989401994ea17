/**
 * The admin session cookie's `Secure` flag on the real server (`advanced.secure_cookies`): with
 * the default `auto` it follows the transport (plain HTTP: none, so a browser on another host
 * keeps the cookie; TLS or a trusted proxy's `X-Forwarded-Proto: https`: Secure), `true` always
 * sets it, and an admin login over plain HTTP from another host is logged as a warning once.
 */
import assert from "node:assert/strict";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { startSvc } from "./helpers/svc.ts";

const WARNING = /admin login of "\$bootstrap" from 203\.0\.113\.9 over plain HTTP/;

/** The attributes of the session cookie a login sets. */
async function loginFlags(admin: AdminClient): Promise<string[]> {
  const response = await admin.login();
  assert.equal(response.status, 200);
  const setCookie = response.headers.get("set-cookie") ?? "";
  assert.match(setCookie, /^svc_session=/);
  return setCookie.split("; ");
}

Deno.test("secure cookies: by default a plain-HTTP login's cookie has no Secure flag", async () => {
  await using svc = await startSvc({ unsetEnv: ["SVC_SECURE_COOKIES"] });
  const admin = new AdminClient(svc.url);
  assert.equal((await loginFlags(admin)).includes("Secure"), false);
  assert.deepEqual(await admin.json("GET", "/session"), { valid: true, admin_gui: true });
  const claimed = new AdminClient(svc.url);
  claimed.headers["x-forwarded-proto"] = "https";
  assert.equal(
    (await loginFlags(claimed)).includes("Secure"),
    false,
    "X-Forwarded-Proto counts only with trust_proxy_headers",
  );
});

Deno.test("secure cookies: behind a trusted proxy, X-Forwarded-Proto https makes it Secure; plain HTTP from another host warns once", async () => {
  await using svc = await startSvc({
    env: { SVC_TRUST_PROXY_HEADERS: "true" },
    unsetEnv: ["SVC_SECURE_COOKIES"],
  });
  const proxied = new AdminClient(svc.url);
  proxied.headers["x-forwarded-proto"] = "https";
  proxied.headers["x-forwarded-for"] = "198.51.100.20";
  assert.equal((await loginFlags(proxied)).includes("Secure"), true);

  const local = new AdminClient(svc.url);
  assert.equal((await loginFlags(local)).includes("Secure"), false);

  const remote = new AdminClient(svc.url);
  remote.headers["x-forwarded-for"] = "203.0.113.9";
  assert.equal((await loginFlags(remote)).includes("Secure"), false);
  assert.equal((await loginFlags(remote)).includes("Secure"), false);
  await logged(svc.logs, WARNING);
  const warnings = svc.logs.filter((line) => /over plain HTTP/.test(line));
  assert.equal(warnings.length, 1, `one warning, for the remote address only:\n${warnings}`);
  assert.match(warnings[0], WARNING);
});

Deno.test("secure cookies: secure_cookies true sets Secure even over plain HTTP", async () => {
  await using svc = await startSvc({ env: { SVC_SECURE_COOKIES: "true" } });
  assert.equal((await loginFlags(new AdminClient(svc.url))).includes("Secure"), true);
});

Deno.test("secure cookies: over the TLS listener the default sets Secure", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-secure-cookies-" });
  try {
    await using svc = await startSvc({
      dataDir,
      env: { SVC_TLS_ENABLED: "true" },
      unsetEnv: ["SVC_SECURE_COOKIES"],
    });
    const cert = await Deno.readTextFile(`${dataDir}/.svc/tls/cert.pem`);
    const client = Deno.createHttpClient({ caCerts: [cert] });
    try {
      const response = await fetch(`${svc.url}/_/api/admin/login`, {
        method: "POST",
        client,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ password: ADMIN_PASSWORD }),
      });
      assert.equal(response.status, 200);
      await response.body?.cancel();
      assert.ok((response.headers.get("set-cookie") ?? "").split("; ").includes("Secure"));
    } finally {
      client.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

/** Waits until a log line matches (the server's output reaches the test asynchronously). */
async function logged(logs: string[], pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!logs.some((line) => pattern.test(line))) {
    if (Date.now() > deadline) assert.fail(`no log line matching ${pattern}:\n${logs.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // A second warning, if one were logged, would follow within this margin.
  await new Promise((resolve) => setTimeout(resolve, 300));
}
