import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { SvcError } from "../lib/errors.ts";
import { BootstrapCredentials } from "../iam/credentials.ts";
import {
  fileBasename,
  formValues,
  type PostFormField,
  type PostPolicyInput,
  verifyPostPolicy,
} from "./post-policy.ts";

// The worked example of the AWS S3 API reference, "Example: Browser-Based Upload using HTTP POST
// (Using AWS Signature Version 4)": its credentials, base64 policy and published signature.
const EXAMPLE_AKID = "AKIAIOSFODNN7EXAMPLE";
const EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const EXAMPLE_POLICY =
  "eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9";
const EXAMPLE_SIGNATURE = "8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e";
const EXAMPLE_NOW = Date.UTC(2015, 11, 29, 0, 0, 1);

/** The example's form, with the field-name spelling of the guide's HTML. */
function exampleFields(): PostFormField[] {
  return [
    { name: "key", value: "user/user1/${filename}" },
    { name: "acl", value: "public-read" },
    {
      name: "success_action_redirect",
      value: "http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html",
    },
    { name: "Content-Type", value: "image/jpeg" },
    { name: "x-amz-meta-uuid", value: "14365123651274" },
    { name: "x-amz-server-side-encryption", value: "AES256" },
    { name: "X-Amz-Credential", value: `${EXAMPLE_AKID}/20151229/us-east-1/s3/aws4_request` },
    { name: "X-Amz-Algorithm", value: "AWS4-HMAC-SHA256" },
    { name: "X-Amz-Date", value: "20151229T000000Z" },
    { name: "x-amz-meta-tag", value: "" },
    { name: "Policy", value: EXAMPLE_POLICY },
    { name: "X-Amz-Signature", value: EXAMPLE_SIGNATURE },
  ];
}

const exampleCredentials = new BootstrapCredentials(EXAMPLE_AKID, EXAMPLE_SECRET);

function example(overrides: Partial<PostPolicyInput> = {}): PostPolicyInput {
  return {
    bucket: "sigv4examplebucket",
    fields: exampleFields(),
    filename: "C:\\Users\\me\\MyPhoto.jpg",
    credentials: exampleCredentials,
    now: EXAMPLE_NOW,
    ...overrides,
  };
}

function edit(fields: PostFormField[], name: string, value: string | null): PostFormField[] {
  const out = fields.filter((f) => f.name.toLowerCase() !== name.toLowerCase());
  return value === null ? out : [...out, { name, value }];
}

function throwsWith(work: () => unknown, code: string, message?: RegExp | string) {
  assert.throws(work, (err) => {
    assert.ok(err instanceof SvcError, `expected SvcError, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (typeof message === "string") assert.ok(err.message.includes(message), err.message);
    else if (message) assert.match(err.message, message);
    return true;
  });
}

Deno.test("the AWS documentation example verifies", () => {
  const verified = verifyPostPolicy(example());
  assert.equal(verified.principal.accessKeyId, EXAMPLE_AKID);
  assert.equal(verified.values.get("key"), "user/user1/MyPhoto.jpg");
  assert.equal(verified.values.get("content-type"), "image/jpeg");
  assert.equal(verified.contentLength, null);
  assert.equal(verified.expiration, Date.UTC(2015, 11, 30, 12));
  // Hex case does not matter.
  const upper = edit(exampleFields(), "X-Amz-Signature", EXAMPLE_SIGNATURE.toUpperCase());
  verifyPostPolicy(example({ fields: upper }));
});

Deno.test("signature faults", () => {
  const zeros = edit(exampleFields(), "X-Amz-Signature", "0".repeat(64));
  throwsWith(() => verifyPostPolicy(example({ fields: zeros })), "SignatureDoesNotMatch");
  const otherPolicy = edit(
    exampleFields(),
    "Policy",
    btoa('{"expiration":"2999-01-01T00:00:00Z","conditions":[]}'),
  );
  throwsWith(() => verifyPostPolicy(example({ fields: otherPolicy })), "SignatureDoesNotMatch");
  const wrongSecret = new BootstrapCredentials(EXAMPLE_AKID, "not-the-secret");
  throwsWith(
    () => verifyPostPolicy(example({ credentials: wrongSecret })),
    "SignatureDoesNotMatch",
  );
  const region = edit(
    exampleFields(),
    "X-Amz-Credential",
    `${EXAMPLE_AKID}/20151229/eu-west-1/s3/aws4_request`,
  );
  throwsWith(() => verifyPostPolicy(example({ fields: region })), "SignatureDoesNotMatch");
  const unknown = edit(
    exampleFields(),
    "X-Amz-Credential",
    "NOSUCHKEY/20151229/us-east-1/s3/aws4_request",
  );
  throwsWith(() => verifyPostPolicy(example({ fields: unknown })), "InvalidAccessKeyId");
});

Deno.test("required fields and their shapes", () => {
  for (const name of ["X-Amz-Signature", "X-Amz-Credential", "X-Amz-Algorithm", "X-Amz-Date"]) {
    throwsWith(
      () => verifyPostPolicy(example({ fields: edit(exampleFields(), name, null) })),
      "InvalidArgument",
      `must contain a field named '${name.toLowerCase()}'`,
    );
  }
  throwsWith(
    () => verifyPostPolicy(example({ fields: edit(exampleFields(), "Policy", null) })),
    "AccessDenied",
    /anonymous/,
  );
  const v2 = [...edit(exampleFields(), "X-Amz-Signature", null), { name: "signature", value: "x" }];
  throwsWith(() => verifyPostPolicy(example({ fields: v2 })), "InvalidArgument", /Version 2/);
  const sha1 = edit(exampleFields(), "X-Amz-Algorithm", "AWS4-HMAC-SHA1");
  throwsWith(
    () => verifyPostPolicy(example({ fields: sha1 })),
    "InvalidArgument",
    /AWS4-HMAC-SHA256/,
  );
  for (
    const credential of [
      `${EXAMPLE_AKID}/20151229/us-east-1/s3`,
      `${EXAMPLE_AKID}/20151229/us-east-1/ec2/aws4_request`,
      `${EXAMPLE_AKID}/2015-12-29/us-east-1/s3/aws4_request`,
      `/20151229/us-east-1/s3/aws4_request`,
    ]
  ) {
    const fields = edit(exampleFields(), "X-Amz-Credential", credential);
    throwsWith(() => verifyPostPolicy(example({ fields })), "InvalidArgument", /X-Amz-Credential/);
  }
  for (const date of ["20151230T000000Z", "2015-12-29T00:00:00Z"]) {
    const fields = edit(exampleFields(), "X-Amz-Date", date);
    throwsWith(() => verifyPostPolicy(example({ fields })), "InvalidArgument", /X-Amz-Date/);
  }
});

Deno.test("expiration", () => {
  throwsWith(
    () => verifyPostPolicy(example({ now: Date.UTC(2015, 11, 30, 12, 0, 0) })),
    "AccessDenied",
    "Invalid according to Policy: Policy expired.",
  );
});

Deno.test("conditions of the example, each broken", () => {
  const cases: [string, string | null, string][] = [
    ["acl", "private", '["eq", "$acl", "public-read"]'],
    ["key", "user/user2/x", '["starts-with", "$key", "user/user1/"]'],
    ["Content-Type", "text/html", '["starts-with", "$Content-Type", "image/"]'],
    ["Content-Type", "image/png,text/html", '["starts-with", "$Content-Type", "image/"]'],
    ["x-amz-meta-uuid", null, '["eq", "$x-amz-meta-uuid", "14365123651274"]'],
  ];
  for (const [name, value, condition] of cases) {
    throwsWith(
      () => verifyPostPolicy(example({ fields: edit(exampleFields(), name, value) })),
      "AccessDenied",
      `Invalid according to Policy: Policy Condition failed: ${condition}`,
    );
  }
  // The bucket condition is judged against the URL's bucket.
  throwsWith(
    () => verifyPostPolicy(example({ bucket: "otherbucket" })),
    "AccessDenied",
    '["eq", "$bucket", "sigv4examplebucket"]',
  );
  // A comma list of image types passes the Content-Type prefix.
  const list = edit(exampleFields(), "Content-Type", "image/png, image/gif");
  assert.equal(
    verifyPostPolicy(example({ fields: list })).values.get("content-type"),
    "image/png, image/gif",
  );
  // ${filename} is expanded before matching: a name with a path still lands under user/user1/.
  assert.equal(
    verifyPostPolicy(example({ filename: "../../etc/passwd" })).values.get("key"),
    "user/user1/passwd",
  );
});

Deno.test("every field must be covered, except the exempt ones", () => {
  const extra = [...exampleFields(), { name: "X-Amz-Meta-Extra", value: "sneaky" }];
  throwsWith(
    () => verifyPostPolicy(example({ fields: extra })),
    "AccessDenied",
    "Invalid according to Policy: Extra input fields: X-Amz-Meta-Extra",
  );
  const ignored = [...exampleFields(), { name: "x-ignore-flash", value: "1" }, {
    name: "X-Ignore-Other",
    value: "2",
  }];
  verifyPostPolicy(example({ fields: ignored }));
});

// ── policies signed here ───────────────────────────────────────────────────

const AKID = "AKIDPOSTTEST";
const SECRET = "post-test-secret";
const credentials = new BootstrapCredentials(AKID, SECRET);
const CREDENTIAL = `${AKID}/20260801/us-east-1/s3/aws4_request`;
const NOW = Date.UTC(2026, 7, 1, 12);

/** Signs with a from-scratch HMAC chain, independent of signing-key.ts. */
function sign(policy: string): string {
  const h = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();
  const key = h(h(h(h(`AWS4${SECRET}`, "20260801"), "us-east-1"), "s3"), "aws4_request");
  return createHmac("sha256", key).update(policy).digest("hex");
}

function signed(
  conditions: unknown[],
  fields: PostFormField[],
  expiration = "2026-08-02T00:00:00Z",
): PostPolicyInput {
  const policy = btoa(JSON.stringify({
    expiration,
    conditions: [
      ...conditions,
      { "x-amz-credential": CREDENTIAL },
      { "x-amz-algorithm": "AWS4-HMAC-SHA256" },
      { "x-amz-date": "20260801T120000Z" },
    ],
  }));
  return {
    bucket: "b",
    fields: [
      ...fields,
      { name: "x-amz-credential", value: CREDENTIAL },
      { name: "x-amz-algorithm", value: "AWS4-HMAC-SHA256" },
      { name: "x-amz-date", value: "20260801T120000Z" },
      { name: "policy", value: policy },
      { name: "x-amz-signature", value: sign(policy) },
    ],
    filename: "f.txt",
    credentials,
    now: NOW,
  };
}

Deno.test("content-length-range conditions intersect", () => {
  const verified = verifyPostPolicy(signed([
    ["content-length-range", 10, 1000],
    ["content-length-range", "5", "500"],
    { key: "k" },
  ], [{ name: "key", value: "k" }]));
  assert.deepEqual(verified.contentLength, { min: 10, max: 500 });
});

Deno.test("starts-with an empty prefix allows anything, even an absent field", () => {
  const verified = verifyPostPolicy(signed([
    ["starts-with", "$key", ""],
    ["starts-with", "$x-amz-meta-anything", ""],
    ["eq", "$success_action_status", "201"],
  ], [{ name: "Key", value: "any/${filename}" }, { name: "success_action_status", value: "201" }]));
  assert.equal(verified.values.get("key"), "any/f.txt");
});

Deno.test("repeated fields are joined with commas before matching", () => {
  const fields = [{ name: "key", value: "k" }, { name: "x-amz-meta-tag", value: "Ninja" }, {
    name: "X-Amz-Meta-Tag",
    value: "Stallman",
  }];
  verifyPostPolicy(signed([{ key: "k" }, { "x-amz-meta-tag": "Ninja,Stallman" }], fields));
  throwsWith(
    () => verifyPostPolicy(signed([{ key: "k" }, { "x-amz-meta-tag": "Ninja" }], fields)),
    "AccessDenied",
  );
});

Deno.test("malformed policies are InvalidPolicyDocument", () => {
  const key = [{ name: "key", value: "k" }];
  const cases: [unknown[], string | undefined][] = [
    [[["content-length-range", 10]], undefined],
    [[["content-length-range", 10, 5]], undefined],
    [[["content-length-range", -1, 5]], undefined],
    [[["content-length-range", 1.5, 5]], undefined],
    [[["matches", "$key", "k"]], undefined],
    [[["eq", "key", "k"]], undefined],
    [[["eq", "$key"]], undefined],
    [[{ key: 5 }], undefined],
    [[{}], undefined],
    [["key"], undefined],
    [[], "2026-02-30T00:00:00Z"],
    [[], "tomorrow"],
  ];
  for (const [conditions, expiration] of cases) {
    throwsWith(
      () => verifyPostPolicy(signed([{ key: "k" }, ...conditions], key, expiration)),
      "InvalidPolicyDocument",
    );
  }
  for (
    const body of [
      "not base64!",
      btoa("not json"),
      btoa("[]"),
      btoa('{"conditions":[]}'),
      btoa('{"expiration":"2026-08-02T00:00:00Z"}'),
    ]
  ) {
    const input = signed([], key);
    const fields = input.fields.map((f) =>
      f.name === "policy"
        ? { name: "policy", value: body }
        : f.name === "x-amz-signature"
        ? { name: "x-amz-signature", value: sign(body) }
        : f
    );
    throwsWith(() => verifyPostPolicy({ ...input, fields }), "InvalidPolicyDocument");
  }
});

Deno.test("formValues and fileBasename", () => {
  assert.equal(fileBasename("C:\\a\\b.txt"), "b.txt");
  assert.equal(fileBasename("dir/sub/c.txt"), "c.txt");
  assert.equal(fileBasename("plain"), "plain");
  assert.equal(fileBasename(null), "");
  const values = formValues([{ name: "Key", value: "${filename}/${filename}" }], "x/y.z");
  assert.equal(values.get("key"), "y.z/y.z");
});
