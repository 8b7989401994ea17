import assert from "node:assert/strict";
import { validateConfig } from "../config/schema/schema.ts";
import { traceAdmission, TraceInputError } from "./trace.ts";

const config = validateConfig({
  admission: {
    blocks: [
      { name: "office-deny", match: { source_ip_list: ["10.9.0.0/16"] }, action: "deny" },
      {
        name: "maintenance",
        match: { method: ["PUT"], bucket: "frozen" },
        action: { type: "reject", status: 503, message: "Frozen for maintenance" },
      },
      {
        name: "downloads",
        match: { bucket: "dl", path_glob: "pub/**" },
        action: "allow-anonymous",
      },
      { name: "pass-internal", match: { bucket: "internal" }, action: "continue" },
    ],
  },
  access: { access_key_id: "AKIATRACE", secret_access_key: "trace-secret" },
  storage: { buckets: { site: { public_prefixes: ["assets/"] } } },
});

Deno.test("trace: no block matched falls through to authentication", () => {
  const result = traceAdmission(config, { method: "GET", path: "/other/file.txt" });
  assert.equal(result.outcome, "authenticate");
  assert.equal(result.decided_by, null);
  assert.equal(result.explanation, "no block matched: falls through to authentication");
  assert.deepEqual(result.request, {
    method: "GET",
    bucket: "other",
    key: "file.txt",
    kind: "object-read",
    authenticated: false,
    source_ip: null,
  });
});

Deno.test("trace: first match wins and names the block, its action and position", () => {
  const denied = traceAdmission(config, {
    method: "GET",
    path: "/dl/pub/a.iso",
    sourceIp: "10.9.3.4",
  });
  assert.deepEqual(denied.decided_by, { name: "office-deny", action: "deny", index: 0 });
  assert.equal(denied.outcome, "deny");
  assert.equal(denied.status, 403);
  const admitted = traceAdmission(config, {
    method: "GET",
    path: "/dl/pub/a.iso",
    sourceIp: "192.0.2.1",
  });
  assert.deepEqual(admitted.decided_by, { name: "downloads", action: "allow-anonymous", index: 2 });
  assert.equal(admitted.outcome, "anonymous");
});

Deno.test("trace: reject answers its configured status and message", () => {
  const result = traceAdmission(config, { method: "put", bucket: "frozen", key: "x" });
  assert.equal(result.outcome, "reject");
  assert.equal(result.status, 503);
  assert.match(
    result.explanation,
    /"maintenance" \(#1\) rejects .* 503 \("Frozen for maintenance"\)/,
  );
});

Deno.test("trace: allow-anonymous never admits a signed request or a write", () => {
  const signed = traceAdmission(config, {
    method: "GET",
    path: "/dl/pub/a.iso",
    authenticated: true,
  });
  assert.equal(signed.outcome, "authenticate");
  assert.equal(signed.decided_by?.name, "downloads");
  assert.match(signed.explanation, /signed/);
  const write = traceAdmission(config, { method: "DELETE", path: "/dl/pub/a.iso" });
  assert.equal(write.outcome, "authenticate");
  assert.match(write.explanation, /anonymous reads only; DELETE/);
});

Deno.test("trace: continue, synthesized public-prefix blocks and listings", () => {
  const pass = traceAdmission(config, { method: "GET", path: "/internal/k" });
  assert.equal(pass.outcome, "authenticate");
  assert.equal(pass.decided_by?.action, "continue");
  const asset = traceAdmission(config, { method: "GET", path: "/site/assets/logo.png" });
  assert.deepEqual(asset.decided_by, {
    name: "public-prefix:site",
    action: "allow-anonymous",
    index: 4,
  });
  const listing = traceAdmission(config, { method: "GET", path: "/site?list-type=2&prefix=a" });
  assert.equal(listing.request.kind, "listing");
  assert.equal(listing.outcome, "anonymous");
  assert.match(listing.explanation, /only keys under "assets\/"/);
  const privateKey = traceAdmission(config, { method: "GET", path: "/site/secret.txt" });
  assert.equal(privateKey.outcome, "authenticate");
  assert.equal(privateKey.decided_by, null);
  // A subresource request is not a plain read, so the public prefix does not admit it.
  const acl = traceAdmission(config, { method: "GET", path: "/site/assets/logo.png?acl" });
  assert.equal(acl.request.kind, "other");
  assert.equal(acl.outcome, "authenticate");
});

Deno.test("trace: percent-encoded keys are decoded like the S3 parser does", () => {
  const result = traceAdmission(config, { method: "GET", path: "/dl/pub/a%20b%2Fc.iso" });
  assert.equal(result.request.key, "pub/a b/c.iso");
  assert.equal(result.outcome, "anonymous");
});

Deno.test("trace: bad synthetic requests are refused with a clear message", () => {
  const bad = [
    [{ method: "GET", path: "no-slash" }, /must start with "\/"/],
    [{ method: "G E T", path: "/b" }, /HTTP method name, got "G E T"/],
    [{ method: "GET", path: "/b", sourceIp: "nope" }, /source_ip .* got "nope"/],
    [{ method: "GET", key: "k" }, /needs a bucket/],
    [{ method: "GET", path: "/b/%E0%A4%A" }, /Could not decode/],
    [{ method: "GET", path: "/b", bucket: "b" }, /either path or bucket/],
  ] as const;
  for (const [input, message] of bad) {
    assert.throws(() => traceAdmission(config, input), (err: Error) => {
      assert.ok(err instanceof TraceInputError);
      assert.match(err.message, message);
      return true;
    });
  }
});
