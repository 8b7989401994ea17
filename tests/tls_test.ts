/**
 * Black-box tests of `advanced.tls`: one listener serves S3 and the admin API over HTTPS, with a
 * certificate svc generates once and keeps, or with the operator's own; plain HTTP to that port
 * gets no answer; an unreadable certificate stops the start with a message naming it.
 */
import assert from "node:assert/strict";
import { Agent } from "node:https";
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { ACCESS_KEY, bytesOf, randomBytes, SECRET_KEY, startSvc } from "./helpers/svc.ts";
import { selfSignedCert } from "../src/http/self-signed-cert.ts";
import { certificateFingerprint } from "../src/http/tls-material.ts";
import { awsAvailable, awsCli } from "./helpers/awscli.ts";

const TLS_ON = { SVC_TLS_ENABLED: "true" };

/** An S3 client that trusts exactly `cert`. */
function clientTrusting(url: string, cert: string): S3Client {
  return new S3Client({
    endpoint: url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    requestHandler: { httpsAgent: new Agent({ ca: cert }) },
  });
}

async function healthOver(url: string, cert: string): Promise<number> {
  const client = Deno.createHttpClient({ caCerts: [cert] });
  try {
    const response = await fetch(`${url}/_/health`, { client });
    await response.body?.cancel();
    return response.status;
  } finally {
    client.close();
  }
}

Deno.test("tls: a generated certificate serves S3 and the admin API, and is kept across restarts", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-tls-" });
  try {
    let fingerprint: string;
    {
      await using svc = await startSvc({ dataDir, env: TLS_ON });
      assert.match(svc.url, /^https:\/\//);
      const cert = await Deno.readTextFile(`${dataDir}/.svc/tls/cert.pem`);
      const keyMode = (await Deno.stat(`${dataDir}/.svc/tls/key.pem`)).mode! & 0o777;
      assert.equal(keyMode, 0o600, "the private key is readable by svc's user only");
      fingerprint = certificateFingerprint(cert);
      assert.ok(svc.logs.some((l) => l.includes(fingerprint)), "the fingerprint is logged");
      assert.equal(await healthOver(svc.url, cert), 200);

      await fetch(svc.url.replace("https", "http") + "/_/health").then(
        () => assert.fail("plain HTTP must not be answered on a TLS port"),
        (err) => assert.ok(err instanceof Error),
      );
      // An untrusting client refuses the certificate: it is not silently valid.
      await fetch(`${svc.url}/_/health`).then(
        () => assert.fail("an unknown self-signed certificate must not verify"),
        (err) => assert.ok(err instanceof Error),
      );
    }
    await using again = await startSvc({ dataDir, env: TLS_ON });
    const kept = await Deno.readTextFile(`${dataDir}/.svc/tls/cert.pem`);
    assert.equal(certificateFingerprint(kept), fingerprint, "the same certificate after a restart");
    assert.equal(await healthOver(again.url, kept), 200);
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("tls: S3 requests over HTTPS with the SDK (and awscli where installed)", async () => {
  await using svc = await startSvc({ env: TLS_ON });
  const cert = await Deno.readTextFile(`${svc.dataDir}/.svc/tls/cert.pem`);
  const s3 = clientTrusting(svc.url, cert);
  await s3.send(new CreateBucketCommand({ Bucket: "tls" }));
  const body = randomBytes(300_000);
  await s3.send(new PutObjectCommand({ Bucket: "tls", Key: "dir/blob", Body: body }));
  const got = await s3.send(new GetObjectCommand({ Bucket: "tls", Key: "dir/blob" }));
  assert.deepEqual(await bytesOf(got.Body), body);
  if (await awsAvailable()) {
    const caPath = `${svc.dataDir}/.svc/tls/cert.pem`;
    await using cli = await awsCli(svc.url);
    const listing = await cli.run(["--ca-bundle", caPath, "s3", "ls", "s3://tls/dir/"]);
    assert.equal(listing.code, 0, listing.stderr);
    assert.match(listing.stdout, /blob/);
  }
});

Deno.test("tls: the operator's certificate and key are served as given", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-tls-own-" });
  try {
    const own = await selfSignedCert(["127.0.0.1", "localhost"]);
    await Deno.writeTextFile(`${dir}/cert.pem`, own.cert);
    await Deno.writeTextFile(`${dir}/key.pem`, own.key);
    await using svc = await startSvc({
      env: { ...TLS_ON, SVC_TLS_CERT: `${dir}/cert.pem`, SVC_TLS_KEY: `${dir}/key.pem` },
    });
    assert.equal(await healthOver(svc.url, own.cert), 200);
    assert.ok(svc.logs.some((l) => l.includes(certificateFingerprint(own.cert))));
    await assert.rejects(Deno.stat(`${svc.dataDir}/.svc/tls/cert.pem`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: a missing certificate file stops the start with a message naming it", async () => {
  await assert.rejects(
    startSvc({
      env: { ...TLS_ON, SVC_TLS_CERT: "/nonexistent/cert.pem", SVC_TLS_KEY: "/nonexistent/k" },
    }),
    /advanced\.tls\.cert_path "\/nonexistent\/cert\.pem"/,
  );
});
