import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { selfSignedCert } from "./self-signed-cert.ts";
import { certificateFingerprint, certificateHosts } from "./tls-material.ts";

Deno.test("self-signed certificate: names its hosts, verifies for them and only them", async () => {
  const { cert, key } = await selfSignedCert(["localhost", "127.0.0.1", "::1"]);
  const parsed = new X509Certificate(cert);
  assert.equal(
    parsed.subjectAltName,
    "DNS:localhost, IP Address:127.0.0.1, IP Address:::1",
  );
  assert.ok(parsed.verify(parsed.publicKey), "signed by its own key");
  assert.equal(parsed.ca, false);
  assert.equal(
    certificateFingerprint(cert),
    parsed.fingerprint256,
    "the logged fingerprint is the one browsers and openssl show",
  );

  assert.equal(await servedTo(cert, key), "ok");
  // A certificate for another address, served at 127.0.0.1: the client refuses it.
  const wrong = await selfSignedCert(["127.0.0.2"]);
  await assert.rejects(servedTo(wrong.cert, wrong.key));
});

/** Serves `cert` at 127.0.0.1 and fetches through a client trusting exactly it. */
async function servedTo(cert: string, key: string): Promise<string> {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    () => new Response("ok"),
  );
  const client = Deno.createHttpClient({ caCerts: [cert] });
  try {
    return await (await fetch(`https://127.0.0.1:${server.addr.port}/`, { client })).text();
  } finally {
    client.close();
    await server.shutdown();
  }
}

Deno.test("self-signed certificate: validity starts an hour back and lasts the days asked", async () => {
  const now = new Date("2026-11-24T12:00:00Z");
  const parsed = new X509Certificate((await selfSignedCert(["a.example"], 30, now)).cert);
  assert.equal(new Date(parsed.validFrom).toISOString(), "2026-11-24T11:00:00.000Z");
  assert.equal(new Date(parsed.validTo).toISOString(), "2026-12-24T12:00:00.000Z");
  assert.equal(parsed.subjectAltName, "DNS:a.example");
});

Deno.test("generated certificates name loopback, this host and a specific listen address", () => {
  const hosts = certificateHosts("10.1.2.3");
  for (const host of ["localhost", "127.0.0.1", "::1", "10.1.2.3"]) assert.ok(hosts.includes(host));
  assert.ok(!certificateHosts("0.0.0.0").includes("0.0.0.0"));
});
