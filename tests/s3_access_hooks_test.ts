/**
 * The authorize step and the IAM hooks of the S3 handler (src/s3/access.ts), before IAM exists:
 * the real S3 handler over real services (filesystem backend in a temp dir, real SigV4
 * authentication with aws4fetch-signed requests) with a test policy in place of IAM. It denies
 * an action, one key, a copy source, one key of a DeleteObjects, a form's key, and filters
 * listings; the answers must be S3 error documents, and what is allowed must still happen.
 */
import assert from "node:assert/strict";
import { AwsClient } from "aws4fetch";
import { buildConfig } from "../src/config/load.ts";
import { terminateHashWorkers } from "../src/body/body-digest.ts";
import { openServices } from "../src/runtime/services.ts";
import { openS3Surface } from "../src/runtime/s3-surface.ts";
import {
  accessDenied,
  type AccessTarget,
  type KeyVisibility,
  type S3Access,
} from "../src/s3/access.ts";
import { bucketPolicySource } from "../src/s3/bucket-policy.ts";
import { createS3Handler } from "../src/s3/handler.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { ACCESS_KEY, SECRET_KEY } from "./helpers/svc.ts";

/** The test's stand-in for IAM: what it denies and shows is set per step. */
class TestPolicy implements S3Access {
  deny: (target: AccessTarget) => boolean = () => false;
  keys: KeyVisibility | undefined;
  buckets: ((bucket: string) => boolean) | undefined;
  asked: AccessTarget[] = [];
  authorize(_request: unknown, target: AccessTarget): void {
    this.asked.push(target);
    if (this.deny(target)) throw accessDenied(target);
  }
  visibleKeys() {
    return this.keys;
  }
  visibleBuckets() {
    return this.buckets;
  }
  reset() {
    this.deny = () => false;
    this.keys = undefined;
    this.buckets = undefined;
    this.asked = [];
  }
}

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "svc-access-hooks-" });
  const { config } = buildConfig({
    access: { access_key_id: ACCESS_KEY, secret_access_key: SECRET_KEY, authentication: "sigv4" },
    storage: { filesystem: dir },
  }, { env: {} });
  const services = await openServices(config);
  const surface = openS3Surface(services);
  const policy = new TestPolicy();
  const handler = createS3Handler({
    services: {
      objects: services.storage.objects,
      multipart: services.storage.multipart,
      credentials: surface.credentials,
      admission: services.admission,
      bucketPolicy: bucketPolicySource(() => services.config.current),
      usage: services.usage,
      access: policy,
    },
    authenticator: surface.authenticator,
    semaphore: services.semaphore,
    requestTimeoutMs: () => 30_000,
  });
  const client = new AwsClient({
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    service: "s3",
    region: "us-east-1",
    retries: 0,
  });
  // Served over loopback: SigV4 signs the Host header, which a Request built in-process lacks.
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => handler(request, info.remoteAddr.hostname),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const send = async (method: string, path: string, init: RequestInit = {}) =>
    await fetch(await client.sign(`${base}${path}`, { method, ...init }));
  return {
    policy,
    send,
    post: (form: FormData) => fetch(`${base}/bkt`, { method: "POST", body: form }),
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      services.stop();
      terminateHashWorkers();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const ENTITIES: Record<string, string> = { quot: '"', apos: "'", lt: "<", gt: ">", amp: "&" };

/** The texts of every `<name>` element, entities decoded. */
function tags(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))]
    .map((m) => m[1].replace(/&(quot|apos|lt|gt|amp);/g, (_, entity) => ENTITIES[entity]));
}

async function assertDenied(response: Response, pattern: RegExp) {
  const body = await response.text();
  assert.equal(response.status, 403, body);
  assert.deepEqual(tags(body, "Code"), ["AccessDenied"]);
  assert.match(tags(body, "Message")[0], pattern);
}

async function ok(response: Response, status = 200): Promise<string> {
  const body = await response.text();
  assert.equal(response.status, status, body);
  return body;
}

Deno.test("authorize hooks: denials answer S3 errors, allowed work proceeds", async (t) => {
  await using fx = await setup();
  const { policy, send } = fx;
  await ok(await send("PUT", "/bkt"));
  for (const key of ["a.txt", "b.txt", "secret/x.txt"]) {
    await ok(await send("PUT", `/bkt/${key}`, { body: `content of ${key}` }));
  }

  await t.step("every request is authorized with its resolved operation", async () => {
    policy.reset();
    await ok(await send("GET", "/bkt/a.txt"));
    assert.deepEqual(policy.asked, [{
      operation: "GetObject",
      action: "read",
      bucket: "bkt",
      key: "a.txt",
      check: "request",
      principal: { name: "$bootstrap", accessKeyId: ACCESS_KEY },
    }]);
  });

  await t.step("a denied action is refused before the handler runs", async () => {
    policy.reset();
    policy.deny = (target) => target.action === "write";
    await assertDenied(
      await send("PUT", "/bkt/new.txt", { body: "x" }),
      /no write permission on "bkt\/new.txt"/,
    );
    policy.reset();
    assert.equal((await send("GET", "/bkt/new.txt")).status, 404);
    // Reads are still allowed under the same policy.
    policy.deny = (target) => target.action === "write";
    assert.equal(await ok(await send("GET", "/bkt/a.txt")), "content of a.txt");
  });

  await t.step("one denied key, the others readable", async () => {
    policy.reset();
    policy.deny = (target) => target.key?.startsWith("secret/") ?? false;
    await assertDenied(await send("GET", "/bkt/secret/x.txt"), /no read permission/);
    assert.equal((await send("HEAD", "/bkt/secret/x.txt")).status, 403);
    await ok(await send("GET", "/bkt/b.txt"));
  });

  await t.step("bucket-level operations are checked with a null key", async () => {
    policy.reset();
    policy.deny = (target) => target.action === "admin";
    await assertDenied(await send("DELETE", "/bkt"), /no admin permission on bucket "bkt"/);
    assert.deepEqual(policy.asked.map((a) => [a.operation, a.key]), [["DeleteBucket", null]]);
    policy.reset();
    await ok(await send("HEAD", "/bkt"));
  });

  await t.step("CopyObject needs read on its source", async () => {
    policy.reset();
    policy.deny = (target) => target.check === "copy-source" && target.key === "secret/x.txt";
    await assertDenied(
      await send("PUT", "/bkt/copied.txt", {
        headers: { "x-amz-copy-source": "/bkt/secret/x.txt" },
      }),
      /no read permission on "bkt\/secret\/x.txt"/,
    );
    assert.equal((await send("GET", "/bkt/copied.txt")).status, 404);
    await ok(
      await send("PUT", "/bkt/copied.txt", { headers: { "x-amz-copy-source": "/bkt/a.txt" } }),
    );
    assert.equal(await ok(await send("GET", "/bkt/copied.txt")), "content of a.txt");
    const source = policy.asked.find((a) => a.check === "copy-source" && a.key === "a.txt");
    assert.deepEqual(source && { ...source, principal: undefined }, {
      operation: "CopyObject",
      action: "read",
      bucket: "bkt",
      key: "a.txt",
      check: "copy-source",
      principal: undefined,
    });
  });

  await t.step("UploadPartCopy needs read on its source", async () => {
    policy.reset();
    policy.deny = (target) => target.check === "copy-source" && target.key === "secret/x.txt";
    const created = await ok(await send("POST", "/bkt/mp.bin?uploads"));
    const uploadId = tags(created, "UploadId")[0];
    await assertDenied(
      await send("PUT", `/bkt/mp.bin?partNumber=1&uploadId=${uploadId}`, {
        headers: { "x-amz-copy-source": "/bkt/secret/x.txt" },
      }),
      /no read permission on "bkt\/secret\/x.txt"/,
    );
    const parts = await ok(await send("GET", `/bkt/mp.bin?uploadId=${uploadId}`));
    assert.deepEqual(tags(parts, "PartNumber"), []);
    await ok(
      await send("PUT", `/bkt/mp.bin?partNumber=1&uploadId=${uploadId}`, {
        headers: { "x-amz-copy-source": "/bkt/b.txt" },
      }),
    );
    const after = await ok(await send("GET", `/bkt/mp.bin?uploadId=${uploadId}`));
    assert.deepEqual(tags(after, "PartNumber"), ["1"]);
    await ok(await send("DELETE", `/bkt/mp.bin?uploadId=${uploadId}`), 204);
  });

  await t.step("DeleteObjects: a denied key fails alone, the rest are deleted", async () => {
    await ok(await send("PUT", "/bkt/c.txt", { body: "c" }));
    policy.reset();
    policy.deny = (target) => target.check === "batch-key" && target.key === "b.txt";
    const body = "<Delete>" +
      ["a.txt", "b.txt", "c.txt"].map((key) => `<Object><Key>${key}</Key></Object>`).join("") +
      "</Delete>";
    const result = await ok(await send("POST", "/bkt?delete", { body }));
    assert.deepEqual(tags(result, "Key"), ["a.txt", "c.txt", "b.txt"]);
    const errors = result.slice(result.indexOf("<Error>"));
    assert.deepEqual(tags(errors, "Key"), ["b.txt"]);
    assert.deepEqual(tags(errors, "Code"), ["AccessDenied"]);
    assert.match(tags(errors, "Message")[0], /no delete permission on "bkt\/b.txt"/);
    policy.reset();
    assert.equal((await send("GET", "/bkt/a.txt")).status, 404);
    assert.equal((await send("GET", "/bkt/c.txt")).status, 404);
    assert.equal(await ok(await send("GET", "/bkt/b.txt")), "content of b.txt");
  });

  await t.step("a POST form is authorized on its key with the form's signer", async () => {
    policy.reset();
    policy.deny = (target) => target.check === "form-key" && target.key === "forbidden.txt";
    const denied = await fx.post(signedPostForm("bkt", "forbidden.txt", "nope"));
    await assertDenied(denied, /no write permission on "bkt\/forbidden.txt"/);
    const asked = policy.asked.find((a) => a.check === "form-key");
    assert.equal(asked?.principal?.accessKeyId, ACCESS_KEY);
    // The request-level check is skipped for an unsigned form (its signer is unknown then).
    assert.deepEqual(policy.asked.filter((a) => a.check === "request"), []);
    const allowed = await fx.post(signedPostForm("bkt", "allowed.txt", "yes"));
    assert.equal(allowed.status, 204, await allowed.text());
    policy.reset();
    assert.equal((await send("GET", "/bkt/forbidden.txt")).status, 404);
    assert.equal(await ok(await send("GET", "/bkt/allowed.txt")), "yes");
  });
});

/** Every page of a ListObjectsV2, following continuation tokens. */
async function listAll(
  send: (method: string, path: string) => Promise<Response>,
  query: string,
): Promise<
  { pages: { keys: string[]; prefixes: string[]; truncated: boolean }[]; tokens: string[] }
> {
  const pages = [];
  const tokens: string[] = [];
  let token: string | undefined;
  for (let i = 0; i < 20; i++) {
    const suffix = token ? `&continuation-token=${encodeURIComponent(token)}` : "";
    const xml = await ok(await send("GET", `/lst?list-type=2${query}${suffix}`));
    const prefixesXml = xml.slice(xml.indexOf("<CommonPrefixes>") >>> 0);
    pages.push({
      keys: tags(xml.slice(0, xml.indexOf("<CommonPrefixes>") >>> 0), "Key"),
      prefixes: xml.includes("<CommonPrefixes>") ? tags(prefixesXml, "Prefix") : [],
      truncated: tags(xml, "IsTruncated")[0] === "true",
    });
    token = tags(xml, "NextContinuationToken")[0];
    if (token === undefined) return { pages, tokens };
    tokens.push(token);
  }
  throw new Error("the listing never ended");
}

const decodeToken = (token: string) =>
  new TextDecoder().decode(
    Uint8Array.from(atob(token.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)),
  );

Deno.test("list filters: only visible entries, exact continuation, no leak", async (t) => {
  await using fx = await setup();
  const { policy, send } = fx;
  await ok(await send("PUT", "/lst"));
  await ok(await send("PUT", "/other"));
  const keys = [
    "home/alice/1.txt",
    "home/alice/2.txt",
    "home/alice/3.txt",
    "home/alice/4.txt",
    "home/alice/5.txt",
    "home/alice/deep/6.txt",
    "home/bob/1.txt",
    "private/x.txt",
    "top.txt",
  ];
  for (const key of keys) await ok(await send("PUT", `/lst/${key}`, { body: key }));

  await t.step("no filter: the whole bucket, as before", async () => {
    policy.reset();
    const { pages } = await listAll(send, "");
    assert.deepEqual(pages.flatMap((p) => p.keys), keys);
  });

  await t.step("a prefix grant lists only its range, its ancestors as prefixes", async () => {
    policy.reset();
    policy.keys = { prefixes: ["home/alice/"] };
    const flat = await listAll(send, "");
    assert.deepEqual(
      flat.pages.flatMap((p) => p.keys),
      keys.filter((k) => k.startsWith("home/alice/")),
    );
    const root = await listAll(send, "&delimiter=/");
    // Only the way down to the grant: never "private/", "top.txt" or "home/bob/".
    assert.deepEqual(root.pages.flatMap((p) => [...p.keys, ...p.prefixes]), ["home/"]);
    const home = await listAll(send, "&delimiter=/&prefix=home/");
    assert.deepEqual(home.pages.flatMap((p) => [...p.keys, ...p.prefixes]), ["home/alice/"]);
  });

  await t.step("hidden entries never end a page nor appear in a token", async () => {
    policy.reset();
    const hidden = new Set(["home/alice/2.txt", "home/alice/4.txt"]);
    policy.keys = {
      prefixes: ["home/alice/"],
      visible: (entry, kind) => kind === "prefix" || !hidden.has(entry),
    };
    const { pages, tokens } = await listAll(send, "&max-keys=2");
    assert.deepEqual(pages.map((p) => p.keys), [
      ["home/alice/1.txt", "home/alice/3.txt"],
      ["home/alice/5.txt", "home/alice/deep/6.txt"],
    ]);
    assert.deepEqual(pages.map((p) => p.truncated), [true, false]);
    // The token names the last key returned, never a hidden one.
    assert.deepEqual(tokens.map(decodeToken), ["home/alice/3.txt"]);
    // A prefix the predicate refuses is not shown.
    policy.keys = {
      prefixes: ["home/alice/"],
      visible: (entry) => entry !== "home/alice/deep/",
    };
    const rolled = await listAll(send, "&delimiter=/&prefix=home/alice/");
    assert.deepEqual(rolled.pages.flatMap((p) => p.prefixes), []);
    assert.equal(rolled.pages.flatMap((p) => p.keys).length, 5);
  });

  await t.step("ListObjects v1 is filtered the same way, markers name returned keys", async () => {
    policy.reset();
    policy.keys = { prefixes: ["home/alice/"], visible: (entry) => entry !== "home/alice/1.txt" };
    const xml = await ok(await send("GET", "/lst?max-keys=2"));
    assert.deepEqual(tags(xml, "Key"), ["home/alice/2.txt", "home/alice/3.txt"]);
    assert.deepEqual(tags(xml, "NextMarker"), ["home/alice/3.txt"]);
  });

  await t.step("ListBuckets drops buckets the filter refuses, paging stays exact", async () => {
    policy.reset();
    await ok(await send("PUT", "/zzz"));
    policy.buckets = (bucket) => bucket !== "other";
    const first = await ok(await send("GET", "/?max-buckets=1"));
    assert.deepEqual(tags(first, "Name"), ["lst"]);
    const token = tags(first, "ContinuationToken")[0];
    assert.equal(decodeToken(token), "lst");
    const second = await ok(await send("GET", `/?max-buckets=1&continuation-token=${token}`));
    assert.deepEqual(tags(second, "Name"), ["zzz"]);
    assert.deepEqual(tags(second, "ContinuationToken"), []);
  });
});
