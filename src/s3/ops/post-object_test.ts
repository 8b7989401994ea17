/**
 * PostObject against a real ObjectService over a FilesystemBackend in a temp dir: forms are
 * built and signed here (an HMAC chain written out, independent of signing-key.ts), sent as
 * Requests, and what lands on disk is read back.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { BootstrapCredentials } from "../../iam/credentials.ts";
import { terminateHashWorkers } from "../../body/body-digest.ts";
import { ObjectService } from "../../objects/object-service.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { postObject } from "./post-object.ts";
import { parseS3Request } from "../request.ts";
import { bucketRequestOf } from "../routes/routes.ts";
import { rejectsWith } from "../../testing/svc-error-assertions.ts";

const AKID = "AKIAPOSTOBJECTTEST01";
const SECRET = "post-object-unit-secret";
const credentials = new BootstrapCredentials(AKID, SECRET);
const BUCKET = "forms";
const utf8 = new TextEncoder();

const md5Hex = (data: Uint8Array | string) => createHash("md5").update(data).digest("hex");

function amzDate(now = new Date()): { date: string; stamp: string } {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  return { date: stamp.slice(0, 8), stamp };
}

interface FormSpec {
  /** Fields besides the signing ones, in order. */
  fields?: [string, string][];
  /** Conditions besides the signing ones. */
  conditions?: unknown[];
  expiration?: Date;
  file?: { content: Uint8Array | string; filename?: string; type?: string } | null;
  /** Fields placed after the file. */
  after?: [string, string][];
  secret?: string;
  signature?: string;
  anonymous?: boolean;
  /** The bucket the policy names. */
  bucket?: string;
  /** Fields with an exact condition each. */
  eq?: Record<string, string>;
  /** Fields with an empty starts-with condition each (anything goes). */
  any?: Record<string, string>;
}

function sign(policy: string, date: string, secret: string): string {
  const h = (key: string | Uint8Array, data: string) =>
    createHmac("sha256", key).update(data).digest();
  const key = h(h(h(h(`AWS4${secret}`, date), "us-east-1"), "s3"), "aws4_request");
  return createHmac("sha256", key).update(policy).digest("hex");
}

function buildForm(spec: FormSpec): FormData {
  const form = new FormData();
  const eq = Object.entries(spec.eq ?? {}), any = Object.entries(spec.any ?? {});
  for (const [name, value] of [...(spec.fields ?? []), ...eq, ...any]) form.append(name, value);
  if (!spec.anonymous) {
    const { date, stamp } = amzDate();
    const credential = `${AKID}/${date}/us-east-1/s3/aws4_request`;
    const policy = btoa(JSON.stringify({
      expiration: (spec.expiration ?? new Date(Date.now() + 3_600_000)).toISOString(),
      conditions: [
        { bucket: spec.bucket ?? BUCKET },
        ...(spec.conditions ?? []),
        ...eq.map(([name, value]) => ({ [name]: value })),
        ...any.map(([name]) => ["starts-with", `$${name}`, ""]),
        { "x-amz-credential": credential },
        { "x-amz-algorithm": "AWS4-HMAC-SHA256" },
        { "x-amz-date": stamp },
      ],
    }));
    form.append("X-Amz-Credential", credential);
    form.append("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
    form.append("X-Amz-Date", stamp);
    form.append("Policy", policy);
    form.append("X-Amz-Signature", spec.signature ?? sign(policy, date, spec.secret ?? SECRET));
  }
  if (spec.file !== null) {
    const file = spec.file ?? { content: "hello, form" };
    form.append(
      "file",
      new Blob([file.content as BlobPart], { type: file.type ?? "text/plain" }),
      file.filename ?? "hello.txt",
    );
  }
  for (const [name, value] of spec.after ?? []) form.append(name, value);
  return form;
}

/** The usual signed form: key, its condition, and whatever else the test adds. */
function form(spec: FormSpec = {}): FormData {
  return buildForm({
    ...spec,
    fields: [["key", "uploads/${filename}"], ...(spec.fields ?? [])],
    conditions: [["starts-with", "$key", "uploads/"], ...(spec.conditions ?? [])],
  });
}

async function withService(test: (objects: ObjectService) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-post-" });
  try {
    const limits = () => ({ maxObjectSize: 1 << 30 });
    const objects = new ObjectService(await FilesystemBackend.open(dir), limits);
    await objects.createBucket(BUCKET);
    await test(objects);
  } finally {
    terminateHashWorkers();
    await Deno.remove(dir, { recursive: true });
  }
}

function post(
  objects: ObjectService,
  body: BodyInit,
  init: { contentType?: string; bucket?: string } = {},
): Promise<Response> {
  const raw = new Request(`http://svc.test/${init.bucket ?? BUCKET}`, {
    method: "POST",
    body,
    ...(init.contentType ? { headers: { "content-type": init.contentType } } : {}),
  });
  return postObject(
    objects,
    credentials,
    bucketRequestOf(parseS3Request(raw, "REQ1", raw.signal)),
  );
}

async function stored(objects: ObjectService, key: string) {
  const { info, body } = await objects.get(BUCKET, key);
  return { meta: info.meta, bytes: new Uint8Array(await new Response(body).arrayBuffer()) };
}

/** A form's bytes and Content-Type, for bodies sent piece by piece. */
async function serialize(body: FormData): Promise<{ bytes: Uint8Array; contentType: string }> {
  const raw = new Request("http://x/", { method: "POST", body });
  return {
    bytes: new Uint8Array(await raw.arrayBuffer()),
    contentType: raw.headers.get("content-type")!,
  };
}

async function keys(objects: ObjectService): Promise<string[]> {
  const page = await objects.listObjects(BUCKET, { prefix: "", maxKeys: 1000 });
  return page.objects.map((o) => o.key);
}

Deno.test("a signed form stores the file with its metadata; 204 by default", () =>
  withService(async (objects) => {
    const content = utf8.encode("form upload body\r\n--not-a-boundary\r\n");
    const response = await post(
      objects,
      form({
        fields: [
          ["Content-Type", "text/markdown"],
          ["Cache-Control", "max-age=60"],
          ["Content-Disposition", 'attachment; filename="${filename}"'],
          ["x-ignore-submit", "Upload"],
        ],
        conditions: [
          ["starts-with", "$Content-Type", "text/"],
          ["eq", "$cache-control", "max-age=60"],
          ["starts-with", "$content-disposition", "attachment"],
        ],
        eq: { "Content-Encoding": "identity", "Content-Language": "fr" },
        any: { Expires: "Thu, 01 Dec 2094 16:00:00 GMT", "x-amz-meta-Owner": "Ada" },
        file: { content, filename: "notes.md", type: "application/octet-stream" },
        after: [["ignored-after-file", "x"]],
      }),
    );
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
    assert.equal(response.headers.get("etag"), `"${md5Hex(content)}"`);
    assert.equal(response.headers.get("location"), `http://svc.test/${BUCKET}/uploads/notes.md`);
    const { meta, bytes } = await stored(objects, "uploads/notes.md");
    assert.deepEqual(bytes, content);
    assert.equal(meta.etag, md5Hex(content));
    // The form field wins; the file part's own Content-Type is ignored, as on S3.
    assert.equal(meta.contentType, "text/markdown");
    assert.deepEqual(meta.userMeta, { owner: "Ada" });
    assert.deepEqual(meta.headers, {
      "cache-control": "max-age=60",
      "content-disposition": 'attachment; filename="notes.md"',
      "content-encoding": "identity",
      "content-language": "fr",
      expires: "Thu, 01 Dec 2094 16:00:00 GMT",
    });
  }));

Deno.test("success_action_status 200, 201, 204 and junk", () =>
  withService(async (objects) => {
    for (const [status, expected] of [["200", 200], ["204", 204], ["404", 204]] as const) {
      const response = await post(objects, form({ eq: { success_action_status: status } }));
      assert.equal(response.status, expected, status);
      assert.equal(await response.text(), "");
      assert.equal(response.headers.get("etag"), `"${md5Hex("hello, form")}"`);
    }
    const created = await post(
      objects,
      form({
        any: { success_action_status: "201" },
        file: { content: "x", filename: "d\\a&b.txt" },
      }),
    );
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("etag"), `"${md5Hex("x")}"`);
    const xml = await created.text();
    assert.match(xml, /^<\?xml/);
    assert.match(xml, /<PostResponse[^>]*>/);
    assert.ok(
      xml.includes(`<Location>http://svc.test/${BUCKET}/uploads/a%26b.txt</Location>`),
      xml,
    );
    assert.ok(xml.includes(`<Bucket>${BUCKET}</Bucket>`), xml);
    assert.ok(xml.includes("<Key>uploads/a&amp;b.txt</Key>"), xml);
    assert.ok(xml.includes(`<ETag>&quot;${md5Hex("x")}&quot;</ETag>`), xml);
    assert.deepEqual((await stored(objects, "uploads/a&b.txt")).bytes, utf8.encode("x"));
  }));

Deno.test("success_action_redirect answers 303 with bucket, key and etag", () =>
  withService(async (objects) => {
    const response = await post(
      objects,
      form({
        fields: [["success_action_redirect", "https://app.example/done?from=form"]],
        conditions: [["starts-with", "$success_action_redirect", "https://app.example/"]],
        any: { success_action_status: "201" },
      }),
    );
    assert.equal(response.status, 303);
    const etag = `"${md5Hex("hello, form")}"`;
    assert.equal(response.headers.get("etag"), etag);
    const location = new URL(response.headers.get("location")!);
    assert.equal(location.origin + location.pathname, "https://app.example/done");
    assert.equal(location.searchParams.get("from"), "form");
    assert.equal(location.searchParams.get("bucket"), BUCKET);
    assert.equal(location.searchParams.get("key"), "uploads/hello.txt");
    assert.equal(location.searchParams.get("etag"), etag);
    // The older `redirect` field works too; a URL S3 cannot follow is ignored.
    const old = await post(objects, form({ eq: { redirect: "http://x.example/" } }));
    assert.equal(old.status, 303);
    const junk = await post(objects, form({ eq: { success_action_redirect: "not a url" } }));
    assert.equal(junk.status, 204);
  }));

Deno.test("policy failures store nothing", () =>
  withService(async (objects) => {
    await objects.createBucket("other-bucket");
    const image = ["starts-with", "$Content-Type", "image/"];
    const cases: [FormData, string, RegExp | string, string?][] = [
      [form({ expiration: new Date(Date.now() - 1000) }), "AccessDenied", "Policy expired."],
      [form({ secret: "wrong" }), "SignatureDoesNotMatch", /signature/],
      [form({ signature: "0".repeat(64) }), "SignatureDoesNotMatch", /signature/],
      [
        form({ fields: [["x-amz-meta-extra", "1"]] }),
        "AccessDenied",
        "Extra input fields: x-amz-meta-extra",
      ],
      [
        form({ fields: [["Content-Type", "text/html"]], conditions: [image] }),
        "AccessDenied",
        'Policy Condition failed: ["starts-with", "$Content-Type", "image/"]',
      ],
      // The key condition is checked against the expanded key.
      [
        buildForm({
          fields: [["key", "out/${filename}"]],
          conditions: [["starts-with", "$key", "uploads/"]],
        }),
        "AccessDenied",
        '["starts-with", "$key", "uploads/"]',
      ],
      // The bucket condition names the URL's bucket.
      [form(), "AccessDenied", '"$bucket"', "other-bucket"],
      [form({ anonymous: true }), "AccessDenied", /anonymous/],
    ];
    for (const [body, code, message, bucket] of cases) {
      await rejectsWith(post(objects, body, { bucket }), code, message);
    }
    assert.deepEqual(await keys(objects), []);
  }));

Deno.test("content-length-range is enforced on the streamed bytes", () =>
  withService(async (objects) => {
    const range = (content: string, min = 3, max = 5) =>
      form({
        conditions: [["content-length-range", min, max]],
        file: { content, filename: content.length + ".txt" },
      });
    await rejectsWith(
      post(objects, range("123456")),
      "EntityTooLarge",
      /maximum allowed size of 5/,
    );
    await rejectsWith(post(objects, range("12")), "EntityTooSmall", /minimum allowed size of 3/);
    assert.deepEqual(await keys(objects), []);
    for (const ok of ["123", "12345"]) assert.equal((await post(objects, range(ok))).status, 204);
    assert.deepEqual(await keys(objects), ["uploads/3.txt", "uploads/5.txt"]);
    // A big body is stopped early, not read to the end.
    await rejectsWith(post(objects, range("x".repeat(8 << 20), 0, 1024)), "EntityTooLarge");
  }));

Deno.test("form structure faults", () =>
  withService(async (objects) => {
    const noKey = "must contain a field named 'key'";
    // A body cut off inside the file (no closing boundary).
    const { bytes, contentType } = await serialize(form());
    const malformed = "MalformedPOSTRequest";
    const cases: [BodyInit, string | undefined, string, RegExp | string][] = [
      [form({ file: null }), undefined, "IncorrectNumberOfFilesInPostRequest", "exactly one file"],
      [
        buildForm({ conditions: [["starts-with", "$key", ""]] }),
        undefined,
        "InvalidArgument",
        noKey,
      ],
      // A key field after the file does not count.
      [buildForm({ after: [["key", "late"]] }), undefined, "InvalidArgument", noKey],
      ["key=a&b=c", "application/x-www-form-urlencoded", malformed, /well-formed/],
      ["anything", "multipart/form-data", malformed, /well-formed/],
      [bytes.slice(0, bytes.length - 10), contentType, malformed, /well-formed/],
    ];
    for (const [body, type, code, message] of cases) {
      await rejectsWith(post(objects, body, { contentType: type }), code, message);
    }
    assert.deepEqual(await keys(objects), []);
  }));

Deno.test("Content-MD5, key and metadata fields are validated", () =>
  withService(async (objects) => {
    const md5 = (s: string) => btoa(String.fromCharCode(...createHash("md5").update(s).digest()));
    const spec = (value: string) => form({ any: { "Content-MD5": value } });
    assert.equal((await post(objects, spec(md5("hello, form")))).status, 204);
    await rejectsWith(post(objects, spec(md5("other"))), "BadDigest");
    await rejectsWith(post(objects, spec("nope")), "InvalidDigest");
    await rejectsWith(post(objects, buildForm({ any: { key: "a\0b" } })), "InvalidObjectName");
    const bad = form({ any: { "x-amz-meta-bad": "line\nbreak" } });
    await rejectsWith(post(objects, bad), "InvalidArgument", /x-amz-meta-bad/);
  }));

Deno.test("the policy is judged before a single file byte is read", () =>
  withService(async (objects) => {
    const { bytes, contentType } = await serialize(
      form({ secret: "wrong", file: { content: new Uint8Array(100_000) } }),
    );
    const fileStart = new TextDecoder().decode(bytes).indexOf('name="file"');
    const headEnd = fileStart + 200; // the file part's headers, not its content
    let pulledPastHead = false;
    let cancelled = false;
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= headEnd) pulledPastHead = true;
        const end = sent < headEnd ? headEnd : bytes.length;
        controller.enqueue(bytes.slice(sent, end));
        sent = end;
        if (sent >= bytes.length) controller.close();
      },
      cancel: () => void (cancelled = true),
    }, { highWaterMark: 0 });
    await rejectsWith(post(objects, stream, { contentType }), "SignatureDoesNotMatch");
    assert.equal(pulledPastHead, false);
    assert.equal(cancelled, true);
  }));

Deno.test("a missing bucket fails before the file is read, and the body is released", () =>
  withService(async (objects) => {
    const { bytes, contentType } = await serialize(form({ bucket: "no-such-bucket" }));
    let cancelled = false;
    // The body never ends: only a cancel lets the request go.
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(bytes.slice(0, bytes.length - 20)),
      cancel: () => void (cancelled = true),
    });
    await rejectsWith(
      post(objects, stream, { contentType, bucket: "no-such-bucket" }),
      "NoSuchBucket",
    );
    assert.equal(cancelled, true);
  }));

Deno.test("a large file streams through with its bytes intact", () =>
  withService(async (objects) => {
    const content = new Uint8Array(24 << 20);
    for (let i = 0; i < content.length; i += 4096) content[i] = (i / 4096) % 256;
    const response = await post(objects, form({ file: { content, filename: "big.bin" } }));
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("etag"), `"${md5Hex(content)}"`);
    const { meta } = await stored(objects, "uploads/big.bin");
    assert.equal(meta.size, content.length);
    assert.equal(meta.md5, md5Hex(content));
  }));
