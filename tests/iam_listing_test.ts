/**
 * Listings show only what the user may read (SPEC Authentication 7), driven through the SDK with
 * users made over the admin API: ListObjects v1 and v2 (pages, tokens, common prefixes, delimiter
 * tricks), ListMultipartUploads and ListParts, and the browse session's jobs view of a bucket.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { clientAs, type CreatedUser } from "./helpers/iam.ts";
import { startSvc } from "./helpers/svc.ts";

const KEYS = [
  "home/bart/b1.txt",
  "home/homer/a1.txt",
  "home/homer/a2.txt",
  "home/homer/a3.txt",
  "home/homer/sub/a4.txt",
  "home/marge/m1.txt",
  "home/marge/m2.txt",
  "team/public.txt",
  "team/secret/plans.txt",
  "team/secret/zz.txt",
  "team/site/index.html",
  "top.txt",
];

async function setup() {
  const svc = await startSvc();
  const root = svc.client();
  await root.send(new CreateBucketCommand({ Bucket: "data" }));
  await root.send(new CreateBucketCommand({ Bucket: "other" }));
  for (const key of KEYS) {
    await root.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: key }));
  }
  const admin = new AdminClient(svc.url);
  await admin.login();
  const create = (name: string, permissions: unknown[]) =>
    admin.json<CreatedUser>("POST", "/users", { name, permissions }, 201);
  // Reads and writes its home; may list the whole bucket (the case of issue 26).
  const homer = await create("homer", [
    {
      effect: "Allow",
      actions: ["read", "write", "delete"],
      resources: ["data/home/${iam:username}/*"],
    },
    { effect: "Allow", actions: ["list"], resources: ["data"] },
  ]);
  // Reads and lists everything but team/secret/ (an explicit Deny on reading it).
  const staff = await create("staff", [
    { effect: "Allow", actions: ["read", "list", "write"], resources: ["data"] },
    { effect: "Deny", actions: ["read"], resources: ["data/team/secret/*"] },
  ]);
  // The same with the Deny on every action: list included.
  const auditor = await create("auditor", [
    { effect: "Allow", actions: ["read", "list"], resources: ["data"] },
    { effect: "Deny", actions: ["*"], resources: ["data/team/secret/*"] },
  ]);
  return { svc, root, admin, homer, staff, auditor };
}

/** Every entry of a v2 listing, page by page (keys and common prefixes). */
async function listV2(s3: S3Client, params: { Prefix?: string; Delimiter?: string; max?: number }) {
  const pages: string[][] = [];
  let token: string | undefined;
  for (let i = 0; i < 50; i++) {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: "data",
        Prefix: params.Prefix,
        Delimiter: params.Delimiter,
        MaxKeys: params.max,
        ContinuationToken: token,
      }),
    );
    pages.push([
      ...(page.Contents ?? []).map((o) => o.Key!),
      ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!),
    ]);
    if (!page.IsTruncated) return pages;
    token = page.NextContinuationToken;
  }
  throw new Error("the listing never ended");
}

/** Every key of a v1 listing, following NextMarker. */
async function listV1(s3: S3Client, max: number) {
  const keys: string[] = [];
  const markers: string[] = [];
  let marker: string | undefined;
  for (let i = 0; i < 50; i++) {
    const page = await s3.send(
      new ListObjectsCommand({ Bucket: "data", MaxKeys: max, Marker: marker }),
    );
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    if (!page.IsTruncated) return { keys, markers };
    marker = page.NextMarker ?? page.Contents!.at(-1)!.Key!;
    markers.push(marker);
  }
  throw new Error("the listing never ended");
}

Deno.test("iam listing: a home user with list on the bucket sees only the keys it may read", async () => {
  const { svc, homer } = await setup();
  await using _svc = svc;
  const s3 = clientAs(svc, homer);
  const own = KEYS.filter((k) => k.startsWith("home/homer/"));

  assert.deepEqual((await listV2(s3, {})).flat(), own);
  // Pages of two: full pages, nothing skipped or repeated.
  const paged = await listV2(s3, { max: 2 });
  assert.deepEqual(paged, [own.slice(0, 2), own.slice(2, 4)]);
  const v1 = await listV1(s3, 3);
  assert.deepEqual(v1.keys, own);
  assert.deepEqual(v1.markers, [own[2]], "markers name keys returned");

  // Common prefixes only where a readable key lies.
  assert.deepEqual((await listV2(s3, { Delimiter: "/" })).flat(), ["home/"]);
  assert.deepEqual((await listV2(s3, { Prefix: "home/", Delimiter: "/" })).flat(), [
    "home/homer/",
  ]);
  assert.deepEqual((await listV2(s3, { Prefix: "team/", Delimiter: "/" })).flat(), []);
});

Deno.test("iam listing: an explicit Deny hides keys, and no common prefix is cut out of them", async () => {
  const { svc, staff, auditor } = await setup();
  await using _svc = svc;
  for (const user of [staff, auditor]) {
    const s3 = clientAs(svc, user);
    const readable = KEYS.filter((k) => !k.startsWith("team/secret/"));
    assert.deepEqual((await listV2(s3, { max: 5 })).flat(), readable, user.name);
    assert.deepEqual((await listV1(s3, 4)).keys, readable, user.name);
    // `t` as delimiter would roll team/secret/plans.txt up into "team/secret".
    const tricked = (await listV2(s3, { Prefix: "team/", Delimiter: "t" })).flat();
    assert.deepEqual(tricked, ["team/public.t", "team/sit"], user.name);
    assert.deepEqual((await listV2(s3, { Prefix: "team/", Delimiter: "/" })).flat(), [
      "team/public.txt",
      "team/site/",
    ]);
  }
});

Deno.test("iam listing: ListMultipartUploads and ListParts follow the read permission", async () => {
  const { svc, root, homer, staff } = await setup();
  await using _svc = svc;
  const uploads: Record<string, string> = {};
  for (const key of ["home/homer/big.bin", "home/marge/big.bin", "team/secret/big.bin"]) {
    const created = await root.send(new CreateMultipartUploadCommand({ Bucket: "data", Key: key }));
    uploads[key] = created.UploadId!;
    await root.send(
      new UploadPartCommand({
        Bucket: "data",
        Key: key,
        UploadId: created.UploadId,
        PartNumber: 1,
        Body: "part",
      }),
    );
  }
  const listed = async (s3: S3Client, delimiter?: string) => {
    const answer = await s3.send(
      new ListMultipartUploadsCommand({ Bucket: "data", Delimiter: delimiter }),
    );
    return [
      ...(answer.Uploads ?? []).map((u) => `${u.Key} ${u.UploadId}`),
      ...(answer.CommonPrefixes ?? []).map((p) => p.Prefix!),
    ];
  };
  const as = { homer: clientAs(svc, homer), staff: clientAs(svc, staff) };
  assert.deepEqual(await listed(as.homer), [`home/homer/big.bin ${uploads["home/homer/big.bin"]}`]);
  assert.deepEqual(await listed(as.staff), [
    `home/homer/big.bin ${uploads["home/homer/big.bin"]}`,
    `home/marge/big.bin ${uploads["home/marge/big.bin"]}`,
  ]);
  assert.deepEqual(await listed(as.staff, "/"), ["home/"]);

  const parts = async (s3: S3Client, key: string) => {
    try {
      const answer = await s3.send(
        new ListPartsCommand({ Bucket: "data", Key: key, UploadId: uploads[key] }),
      );
      return `parts ${answer.Parts?.length}`;
    } catch (err) {
      return (err as Error).name;
    }
  };
  assert.equal(await parts(as.homer, "home/homer/big.bin"), "parts 1");
  assert.equal(await parts(as.homer, "home/marge/big.bin"), "AccessDenied");
  assert.equal(await parts(as.staff, "home/marge/big.bin"), "parts 1");
  assert.equal(await parts(as.staff, "team/secret/big.bin"), "AccessDenied");
});

Deno.test("iam listing: a browse session sees the jobs view only of buckets its user may see", async () => {
  const { svc, homer } = await setup();
  await using _svc = svc;
  const browser = new AdminClient(svc.url);
  await browser.json("POST", "/session/browser-connect", {
    access_key_id: homer.access_key_id,
    secret_access_key: homer.secret_access_key,
  });
  const seen = await browser.json<{ write_gate: string }>("GET", "/jobs/bucket/data");
  assert.equal(seen.write_gate, "open");
  const refused = await browser.request("GET", "/jobs/bucket/other");
  const body = await refused.json();
  assert.equal(refused.status, 403, JSON.stringify(body));
  // The same answer the browse listing gives for that bucket.
  const listing = await browser.request("GET", "/objects/list?bucket=other");
  assert.equal(listing.status, 403);
  await listing.body?.cancel();
});
