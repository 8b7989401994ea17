import assert from "node:assert/strict";
import { BROWSE_COOKIE, BROWSE_COOKIE_PATH, BrowseCredentials } from "./browse-credentials.ts";

const PAIR = { access_key_id: "AKIAEXAMPLEEXAMPLE12", secret_access_key: "s".repeat(40) };
const SESSION = "a".repeat(32);
const OTHER = "b".repeat(32);

function fleetMember(
  hash = "$2b$10$sharedhashsharedhashsharedhashsharedhashsharedhash",
  now = () => 1000,
) {
  return new BrowseCredentials(
    { passwordHash: () => hash, secureCookies: () => "auto" },
    now,
  );
}

/** The cookie's value from a `Set-Cookie` header. */
function valueOf(setCookie: string | null): string {
  assert.ok(setCookie);
  const match = new RegExp(`^${BROWSE_COOKIE}=([^;]*);`).exec(setCookie);
  assert.ok(match, setCookie);
  return match[1];
}

Deno.test("browse credentials: outside a fleet the pair stays in memory, no cookie", () => {
  const browse = new BrowseCredentials({ passwordHash: () => null, secureCookies: () => "auto" });
  assert.equal(browse.set(SESSION, PAIR, Date.now() + 60_000), null);
  assert.deepEqual(browse.get(SESSION), PAIR);
  assert.equal(browse.clearCookie(), null);
  assert.equal(browse.delete(SESSION), true);
  assert.equal(browse.get(SESSION), undefined);
});

Deno.test("browse credentials: another instance opens the sealed pair of the same session", () => {
  const setCookie = fleetMember().set(SESSION, PAIR, 61_000);
  const value = valueOf(setCookie);
  assert.ok(setCookie!.includes(`Path=${BROWSE_COOKIE_PATH}`));
  assert.ok(setCookie!.includes("HttpOnly") && setCookie!.includes("SameSite=Strict"));
  assert.ok(setCookie!.includes("Max-Age=60"));
  // The secret is not readable in the cookie.
  assert.ok(!setCookie!.includes(PAIR.secret_access_key));
  assert.ok(!atob(value.split(".")[2].replace(/-/g, "+").replace(/_/g, "/")).includes("ssss"));
  const elsewhere = fleetMember();
  assert.deepEqual(elsewhere.get(SESSION, value), PAIR);
});

Deno.test("browse credentials: refused for another session, another key, expiry, tampering", () => {
  const value = valueOf(fleetMember().set(SESSION, PAIR, 61_000));
  assert.equal(fleetMember().get(OTHER, value), undefined);
  assert.equal(fleetMember("$2b$10$anotherhash").get(SESSION, value), undefined);
  assert.equal(fleetMember(undefined, () => 61_000).get(SESSION, value), undefined);
  const [version, iv, body] = value.split(".");
  const flipped = body[5] === "A" ? "B" : "A";
  const tampered = `${version}.${iv}.${body.slice(0, 5)}${flipped}${body.slice(6)}`;
  assert.equal(fleetMember().get(SESSION, tampered), undefined);
  assert.equal(fleetMember().get(SESSION, "v1.x.y"), undefined);
  assert.equal(fleetMember().get(SESSION, "garbage"), undefined);
  // Two seals of one pair differ (a fresh nonce each).
  assert.notEqual(valueOf(fleetMember().set(SESSION, PAIR, 61_000)), value);
});

Deno.test("browse credentials: forgetting clears the cookie", () => {
  const browse = fleetMember();
  browse.set(SESSION, PAIR, 61_000);
  assert.equal(browse.delete(SESSION), true);
  const cleared = browse.clearCookie(true);
  assert.equal(valueOf(cleared), "");
  assert.ok(cleared!.includes("Max-Age=0"));
  assert.ok(cleared!.includes("Secure"));
});
