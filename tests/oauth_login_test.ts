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

/** Follows the login redirects like a browser; answers the callback's response and a client. */
async function oauthLogin(svc: SvcProcess, provider: string) {
  const start = await fetch(`${svc.url}/_/api/admin/oauth/authorize/${provider}`, {
    redirect: "manual",
  });
  await start.body?.cancel();
  assert.equal(start.status, 302, "authorize redirects to the provider");
  const atProvider = await fetch(start.headers.get("location")!, { redirect: "manual" });
  await atProvider.body?.cancel();
  assert.equal(atProvider.status, 302, "the provider redirects back");
  const callbackUrl = atProvider.headers.get("location")!;
  const callback = await fetch(callbackUrl, { redirect: "manual" });
  const client = new AdminClient(svc.url);
  const setCookie = callback.headers.get("set-cookie");
  if (setCookie) client.cookie = setCookie.split(";")[0];
  return { callback, callbackUrl, client, body: await callback.text() };
}

async function setUp(idp: FakeIdp) {
  const svc = await startSvc();
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
