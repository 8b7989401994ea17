/**
 * Black-box tests of OIDC admin login against a fake provider on a loopback port
 * (tests/helpers/fake-oidc.ts): providers and mapping rules set up through the external-auth API,
 * the browser's round trip (authorize → provider → callback) followed by hand, and what the
 * session may then do. Also: PKCE and the client secret reach the provider, a forged ID token, an
 * identity no rule maps, and a replayed callback are refused with nothing provisioned.
 */
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { type FakeIdp, startFakeIdp } from "./helpers/fake-oidc.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

/** The `name=value` pairs a response sets (removals included, as empty values). */
function cookiesSet(response: Response): Map<string, string> {
  const pairs = response.headers.getSetCookie().map((line) => line.split(";")[0]);
  return new Map(
    pairs.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
}

/**
 * Follows the login redirects like a browser (the cookie authorize sets goes back with the
 * callback; `headers` go with both svc requests); answers the callback's response and a client.
 */
async function oauthLogin(svc: SvcProcess, provider: string, headers: Record<string, string> = {}) {
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/${provider}`, {
    redirect: "manual",
    headers,
  });
  await start.body?.cancel();
  assert.equal(start.status, 302, "authorize redirects to the provider");
  const flowCookie = [...cookiesSet(start)].map(([name, value]) => `${name}=${value}`).join("; ");
  const atProvider = await fetch(start.headers.get("location")!, { redirect: "manual" });
  await atProvider.body?.cancel();
  assert.equal(atProvider.status, 302, "the provider redirects back");
  const callbackUrl = atProvider.headers.get("location")!;
  const callback = await fetch(callbackUrl, {
    redirect: "manual",
    headers: flowCookie === "" ? headers : { ...headers, cookie: flowCookie },
  });
  const client = new AdminClient(svc.url);
  const session = cookiesSet(callback).get("svc_session");
  if (session) client.cookie = `svc_session=${session}`;
  return { callback, callbackUrl, client, flowCookie, body: await callback.text() };
}

async function setUp(idp: FakeIdp, env: Record<string, string> = {}) {
  const svc = await startSvc({ env: { SVC_OIDC_ALLOW_HTTP_ISSUERS: "true", ...env } });
  const admin = new AdminClient(svc.url);
  await admin.login();
  await admin.json("POST", "/groups", {
    name: "admins",
    permissions: [{ effect: "Allow", actions: ["*"], resources: ["*"] }],
  }, 201);
  await admin.json("POST", "/groups", {
    name: "readers",
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
  }, 201);
  const provider = await admin.json<{ id: string; has_secret: boolean; client_secret?: string }>(
    "POST",
    "/ext-auth/providers",
    {
      name: "fake",
      issuer_url: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      display_name: "Fake IdP",
    },
    201,
  );
  assert.equal(provider.has_secret, true);
  assert.equal(provider.client_secret, undefined, "the secret is never answered");
  await admin.json("POST", "/ext-auth/mappings", {
    provider: "fake",
    match_type: "email_domain",
    match_value: "example.com",
    group: "readers",
  }, 201);
  await admin.json("POST", "/ext-auth/mappings", {
    match_type: "email",
    match_value: "boss@example.com",
    group: "admins",
  }, 201);
  return { svc, admin, providerId: provider.id };
}

Deno.test("oauth: mapped identities sign in, once provisioned; admin follows the groups", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;

  const tested = await admin.json<{ ok: boolean; issuer: string }>(
    "POST",
    `/ext-auth/providers/${
      (await admin.json<{ providers: { id: string }[] }>(
        "GET",
        "/ext-auth/providers",
      )).providers[0].id
    }/test`,
  );
  assert.deepEqual([tested.ok, tested.issuer], [true, idp.issuer]);
  const preview = await admin.json<{ groups: string[] }>("POST", "/ext-auth/mappings/preview", {
    provider: "fake",
    email: "boss@example.com",
  });
  assert.deepEqual(preview.groups.sort(), ["admins", "readers"]);
  // A rule changed in place keeps its id and maps by its new fields.
  const rule = await admin.json<{ id: string }>("POST", "/ext-auth/mappings", {
    match_type: "email",
    match_value: "carol@other.org",
    group: "readers",
  }, 201);
  const updated = await admin.json<{ id: string; group: string; priority: number }>(
    "PUT",
    `/ext-auth/mappings/${rule.id}`,
    { group: "admins", priority: 5 },
  );
  assert.deepEqual([updated.id, updated.group, updated.priority], [rule.id, "admins", 5]);
  const carol = await admin.json<{ groups: string[] }>("POST", "/ext-auth/mappings/preview", {
    provider: "fake",
    email: "carol@other.org",
  });
  assert.deepEqual(carol.groups, ["admins"]);

  const whoami = await (await fetch(`${svc.url}/_/api/whoami`)).json();
  assert.deepEqual(whoami.external_providers, [{ name: "fake", display_name: "Fake IdP" }]);

  idp.user = { sub: "u-alice", email: "alice@example.com" };
  const alice = await oauthLogin(svc, "fake");
  assert.equal(alice.callback.status, 200, alice.body);
  assert.match(alice.body, /url=\/_\//, "the page moves to the UI from this origin");
  const who = await alice.client.json<{ user: string; admin_gui?: boolean }>(
    "GET",
    "/_/api/whoami",
  );
  assert.equal(who.user, "alice@example.com");
  assert.equal((await alice.client.request("GET", "/users")).status, 403, "browse-only session");
  const pair = await alice.client.json<{ stored: boolean }>("GET", "/session/s3-credentials");
  assert.equal(pair.stored, true, "the browser gets the user's own key pair");

  // The same subject again: the same user, not a second one.
  const again = await oauthLogin(svc, "fake");
  assert.equal(again.callback.status, 200);
  const users = await admin.json<
    { users: { name: string; auth_source: string; groups: string[] }[] }
  >(
    "GET",
    "/users",
  );
  assert.deepEqual(
    users.users.map((u) => [u.name, u.auth_source, u.groups]),
    [["alice@example.com", "external", ["readers"]]],
  );

  idp.user = { sub: "u-boss", email: "boss@example.com" };
  const boss = await oauthLogin(svc, "fake");
  assert.equal(boss.callback.status, 200, boss.body);
  assert.equal((await boss.client.request("GET", "/users")).status, 200, "an admin session");
  assert.equal(idp.refusals.length, 0, "PKCE, redirect URI and client secret all held");

  const identities = await admin.json<{ identities: { user: string; subject: string }[] }>(
    "GET",
    "/ext-auth/identities",
  );
  assert.deepEqual(identities.identities.map((i) => [i.user, i.subject]).sort(), [
    ["alice@example.com", "u-alice"],
    ["boss@example.com", "u-boss"],
  ]);
  const audit = await admin.json<{ entries: { event: string; fields: { via?: string } }[] }>(
    "GET",
    "/audit?limit=100",
  );
  assert.ok(audit.entries.some((e) => e.event === "oauth_user_provisioned"));
  assert.ok(audit.entries.some((e) => e.event === "admin_login" && e.fields.via === "oauth:fake"));
});

Deno.test("oauth: unmapped identities, forged tokens and replayed callbacks get no session", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;

  idp.user = { sub: "u-eve", email: "eve@elsewhere.org" };
  const eve = await oauthLogin(svc, "fake");
  assert.equal(eve.callback.status, 403, eve.body);
  assert.equal(eve.client.cookie, null);

  idp.user = { sub: "u-mallory", email: "mallory@example.com" };
  idp.forgeSignature = true;
  const forged = await oauthLogin(svc, "fake");
  assert.equal(forged.callback.status, 403, forged.body);
  assert.match(forged.body, /signature/);
  idp.forgeSignature = false;

  idp.user = { sub: "u-carol", email: "carol@example.com" };
  const carol = await oauthLogin(svc, "fake");
  assert.equal(carol.callback.status, 200);
  const replay = await fetch(carol.callbackUrl, { redirect: "manual" });
  await replay.body?.cancel();
  assert.equal(replay.status, 400, "a callback's state works once");
  assert.equal(replay.headers.get("set-cookie"), null);

  const users = await admin.json<{ users: { name: string }[] }>("GET", "/users");
  assert.deepEqual(users.users.map((u) => u.name), ["carol@example.com"]);
  const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
  for (const outcome of ["no_mapping", "token_invalid", "unknown_state", "ok"]) {
    const line = new RegExp(`^svc_oauth_logins_total\\{outcome="${outcome}"\\} 1$`, "m");
    assert.match(metrics, line);
  }
  const unknown = await fetch(`${svc.url}/_/api/admin/oauth/authorize/nope`, {
    redirect: "manual",
  });
  await unknown.body?.cancel();
  assert.equal(unknown.status, 404);
});

Deno.test("oauth: a flood of authorize calls from one address stops no other address's login", async () => {
  await using idp = await startFakeIdp();
  const { svc } = await setUp(idp, { SVC_TRUST_PROXY_HEADERS: "true" });
  await using _svc = svc;
  // More than any server-side table of pending logins may hold, all from one address.
  const flooder = { "x-forwarded-for": "203.0.113.66" };
  const statuses = new Map<number, number>();
  let sent = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (sent < 10_050) {
      sent++;
      const response = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, {
        redirect: "manual",
        headers: flooder,
      });
      await response.body?.cancel();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
  }));

  idp.user = { sub: "u-alice", email: "alice@example.com" };
  const alice = await oauthLogin(svc, "fake", { "x-forwarded-for": "198.51.100.7" });
  assert.equal(alice.callback.status, 200, alice.body);
  assert.ok(alice.client.cookie, "a session for the other address");
  assert.ok(
    (statuses.get(429) ?? 0) > 10_000,
    `the flooding address is held back: ${[...statuses]}`,
  );
  // The flow went to the browser: a sealed, HttpOnly, Lax cookie scoped to the OAuth routes.
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, {
    redirect: "manual",
    headers: { "x-forwarded-for": "198.51.100.8" },
  });
  await start.body?.cancel();
  const line = start.headers.getSetCookie().find((l) => l.startsWith("svc_oauth="));
  assert.ok(line, "authorize sets the flow cookie");
  assert.match(line, /; HttpOnly/);
  assert.match(line, /; SameSite=Lax/);
  assert.match(line, /; Path=\/_\/api\/admin\/oauth\//);
  assert.match(line, /; Max-Age=600/);
  assert.doesNotMatch(line, /Secure/, "plain http here");
  const https = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, {
    redirect: "manual",
    headers: {
      "x-forwarded-for": "198.51.100.9",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "svc.example",
    },
  });
  await https.body?.cancel();
  assert.match(https.headers.getSetCookie().join("\n"), /svc_oauth=[^;]+;.*; Secure/);

  // A flow cookie is bound to its address and its state, and cannot be altered.
  idp.user = { sub: "u-bob", email: "bob@example.com" };
  const elsewhere = await fetch(
    (await oauthRedirect(svc, { "x-forwarded-for": "198.51.100.10" })).callbackUrl,
    { redirect: "manual", headers: { "x-forwarded-for": "198.51.100.11" } },
  );
  await elsewhere.body?.cancel();
  assert.equal(elsewhere.status, 400, "no cookie, another address: unknown login");
  const own = await oauthRedirect(svc, { "x-forwarded-for": "198.51.100.12" });
  const [name, value] = own.flowCookie.split("=");
  const flipped = value.slice(0, -2) + (value.at(-2) === "A" ? "B" : "A") + value.at(-1);
  for (
    const [cookie, ip] of [
      [own.flowCookie, "198.51.100.13"],
      [`${name}=${flipped}`, "198.51.100.12"],
    ]
  ) {
    const refused = await fetch(own.callbackUrl, {
      redirect: "manual",
      headers: { "x-forwarded-for": ip, cookie },
    });
    await refused.body?.cancel();
    assert.equal(refused.status, 400, `${cookie} from ${ip}`);
  }
});

/** Authorize and the provider's answer, without the callback. */
async function oauthRedirect(svc: SvcProcess, headers: Record<string, string>) {
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, {
    redirect: "manual",
    headers,
  });
  await start.body?.cancel();
  const flowCookie = [...cookiesSet(start)].map(([name, value]) => `${name}=${value}`).join("; ");
  const atProvider = await fetch(start.headers.get("location")!, { redirect: "manual" });
  await atProvider.body?.cancel();
  return { callbackUrl: atProvider.headers.get("location")!, flowCookie };
}

/** Login failures in the audit ring, by reason. */
async function failureReasons(admin: AdminClient): Promise<string[]> {
  const audit = await admin.json<{ entries: { event: string; fields: { reason?: string } }[] }>(
    "GET",
    "/audit?limit=100",
  );
  return audit.entries.filter((e) => e.event === "oauth_login_failed").map((e) =>
    e.fields.reason ?? ""
  );
}

Deno.test("oauth: email rules need a verified email unless the setting allows otherwise", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;

  idp.user = { sub: "u-frank", email: "frank@example.com", email_verified: false };
  const unverified = await oauthLogin(svc, "fake");
  assert.equal(unverified.callback.status, 403, unverified.body);
  idp.user = { sub: "u-gina", email: "gina@example.com", email_verified: "true" };
  const stringly = await oauthLogin(svc, "fake");
  assert.equal(stringly.callback.status, 403, "email_verified must be the JSON true");
  idp.user = { sub: "u-boss", email: "boss@example.com", email_verified: false };
  const boss = await oauthLogin(svc, "fake");
  assert.equal(boss.callback.status, 403, "an exact email rule too");
  assert.deepEqual((await admin.json<{ users: unknown[] }>("GET", "/users")).users, []);
  assert.deepEqual(await failureReasons(admin), ["no_mapping", "no_mapping", "no_mapping"]);

  // A rule that allows it (for a provider that never sends the claim) maps an unverified address;
  // the other rules still do not.
  const rules = await admin.json<{ mappings: { id: string; match_type: string }[] }>(
    "GET",
    "/ext-auth/mappings",
  );
  const domainRule = rules.mappings.find((r) => r.match_type === "email_domain")!;
  const relaxed = await admin.json<{ require_verified_email: boolean }>(
    "PUT",
    `/ext-auth/mappings/${domainRule.id}`,
    { require_verified_email: false },
  );
  assert.equal(relaxed.require_verified_email, false);
  idp.user = { sub: "u-frank", email: "frank@example.com", email_verified: false };
  const allowed = await oauthLogin(svc, "fake");
  assert.equal(allowed.callback.status, 200, allowed.body);
  idp.user = { sub: "u-boss", email: "boss@example.com", email_verified: false };
  await oauthLogin(svc, "fake");
  const users = await admin.json<{ users: { name: string; groups: string[] }[] }>("GET", "/users");
  assert.deepEqual(users.users.map((u) => [u.name, u.groups]).sort(), [
    ["boss@example.com", ["readers"]],
    ["frank@example.com", ["readers"]],
  ], "the exact email rule (admins) still needs a verified address");
});

Deno.test("oauth: email addresses parse strictly; the domain compares without case", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;

  for (
    const email of [
      "eve@evil.example@example.com",
      "eve@example.com@evil.example",
      "a b@example.com",
      "boss@example.com@evil.example",
    ]
  ) {
    idp.user = { sub: `u-${email}`, email };
    const loose = await oauthLogin(svc, "fake");
    assert.equal(loose.callback.status, 403, `${email}: ${loose.body}`);
  }
  idp.user = { sub: "u-hank", email: "hank@EXAMPLE.COM" };
  const upper = await oauthLogin(svc, "fake");
  assert.equal(upper.callback.status, 200, `the domain compares without case: ${upper.body}`);
  const users = await admin.json<{ users: { name: string }[] }>("GET", "/users");
  assert.deepEqual(users.users.map((u) => u.name), ["hank@EXAMPLE.COM"]);
});

Deno.test("oauth: a token whose header names another algorithm than its key is a clean refusal", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;

  idp.user = { sub: "u-ivan", email: "ivan@example.com" };
  for (const alg of ["ES256", "PS256", "HS256", "none"]) {
    idp.headerAlg = alg;
    const mismatched = await oauthLogin(svc, "fake");
    assert.equal(
      mismatched.callback.status,
      403,
      `an ${alg} header on an RSA key: ${mismatched.body}`,
    );
    assert.equal(mismatched.client.cookie, null);
  }
  assert.deepEqual(await failureReasons(admin), Array(4).fill("token_invalid"));
  idp.headerAlg = "RS256";
  const fine = await oauthLogin(svc, "fake");
  assert.equal(fine.callback.status, 200, fine.body);
});

Deno.test("oauth: rotating an external user's keys ends the session it signed in with", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;
  idp.user = { sub: "u-alice", email: "alice@example.com" };
  const alice = await oauthLogin(svc, "fake");
  assert.equal(alice.callback.status, 200, alice.body);
  assert.equal(
    (await alice.client.json<{ stored: boolean }>("GET", "/session/s3-credentials")).stored,
    true,
  );
  const users = await admin.json<{ users: { id: string }[] }>("GET", "/users");
  await admin.json("POST", `/users/${users.users[0].id}/rotate-keys`);
  const revoked = await alice.client.request("GET", "/session/s3-credentials");
  assert.equal(revoked.status, 401);
  await revoked.body?.cancel();
  // Signing in again gives a session on the new keys.
  const again = await oauthLogin(svc, "fake");
  assert.equal(again.callback.status, 200, again.body);
  assert.equal(
    (await again.client.json<{ stored: boolean }>("GET", "/session/s3-credentials")).stored,
    true,
  );
});

Deno.test("oauth: the callback's iss, the token's issuer, azp, iat and expiry are checked", async () => {
  await using idp = await startFakeIdp();
  const { svc, admin } = await setUp(idp);
  await using _svc = svc;
  // Discovery announces RFC 9207 from the start (svc caches the document).
  idp.announceIss = true;
  idp.user = { sub: "u-alice", email: "alice@example.com" };
  const now = Math.floor(Date.now() / 1000);
  const refusals: [string, () => void][] = [
    ["a foreign iss on the callback (RFC 9207)", () => idp.callbackIss = "https://evil.example"],
    ["no iss where discovery announces it", () => idp.callbackIss = undefined],
    [
      "aud with another party, azp not us",
      () => idp.tokenClaims = { aud: [idp.clientId, "other"], azp: "other" },
    ],
    ["no iat", () => idp.tokenClaims = { iat: undefined }],
    ["expired", () => idp.tokenClaims = { iat: now - 900, exp: now - 600 }],
    ["another issuer in the token", () => idp.tokenClaims = { iss: "https://evil.example" }],
    ["another audience", () => idp.tokenClaims = { aud: "someone-else" }],
  ];
  for (const [what, arrange] of refusals) {
    idp.callbackIss = idp.issuer;
    idp.tokenClaims = {};
    arrange();
    const refused = await oauthLogin(svc, "fake");
    assert.ok(
      [400, 403].includes(refused.callback.status),
      `${what}: ${refused.callback.status} ${refused.body}`,
    );
    assert.equal(refused.client.cookie, null, what);
  }
  idp.tokenClaims = {};
  idp.callbackIss = idp.issuer;
  const fine = await oauthLogin(svc, "fake");
  assert.equal(fine.callback.status, 200, `the right iss: ${fine.body}`);
  assert.deepEqual(
    (await admin.json<{ users: { name: string }[] }>("GET", "/users")).users.map((u) => u.name),
    ["alice@example.com"],
  );
});

Deno.test("oauth: a plain-http issuer is refused unless the setting allows it", async () => {
  await using idp = await startFakeIdp();
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  await admin.json("POST", "/groups", { name: "readers", permissions: [] }, 201);
  const provider = await admin.json<{ id: string }>("POST", "/ext-auth/providers", {
    name: "fake",
    issuer_url: idp.issuer,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
  }, 201);
  const tested = await admin.json<{ ok: boolean; error?: string }>(
    "POST",
    `/ext-auth/providers/${provider.id}/test`,
  );
  assert.equal(tested.ok, false);
  assert.match(tested.error ?? "", /oidc_allow_http_issuers/);
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, { redirect: "manual" });
  const body = await start.text();
  assert.notEqual(start.status, 302, "no login starts against an http issuer");
  assert.match(body, /http/);
});

Deno.test("oauth: a discovery document naming another issuer is refused", async () => {
  await using idp = await startFakeIdp();
  const { svc } = await setUp(idp);
  await using _svc = svc;
  idp.discoveryIssuer = "https://evil.example";
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/fake`, { redirect: "manual" });
  const body = await start.text();
  assert.notEqual(start.status, 302, body);
  assert.match(body, /issuer/);
});
