/**
 * IAM on every S3 request, driven like an operator and a client would: users are created through
 * the admin API and their keys sign real SDK requests. Three users — an admin, a read-only user
 * on one bucket, a user limited to `data/home/${iam:username}/*` — meet a matrix of operations;
 * listings are filtered; Deny beats Allow; aws:SourceIp holds; disabling, rotating and deleting
 * take effect on the next request with no restart.
 */
import assert from "node:assert/strict";
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { awsAvailable, awsCli } from "./helpers/awscli.ts";
import { clientAs, type CreatedUser } from "./helpers/iam.ts";
import { signedPostForm } from "./helpers/post-form.ts";
import { startSvc } from "./helpers/svc.ts";

/** "ok", or the S3 error code the request failed with. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "ok";
  } catch (err) {
    const { name, $metadata } = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    // A HEAD answer has no body to name its error: a bare 403 there is a refusal.
    if ((name === "Unknown" || name === "Forbidden") && $metadata?.httpStatusCode === 403) {
      return "AccessDenied";
    }
    return name ?? String(err);
  }
}

async function createUser(
  admin: AdminClient,
  name: string,
  permissions: unknown[],
): Promise<CreatedUser> {
  return await admin.json<CreatedUser>("POST", "/users", { name, permissions }, 201);
}

const ALL = { effect: "Allow", actions: ["*"], resources: ["*"] };

async function setup(dataDir?: string) {
  const svc = await startSvc({ dataDir });
  const root = svc.client();
  for (const bucket of ["data", "shared"]) {
    await root.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  for (const key of ["home/homer/a.txt", "home/marge/b.txt", "other/c.txt", "top.txt"]) {
    await root.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: key }));
  }
  for (const key of ["readme.txt", "secret/plans.txt", "docs/guide.txt"]) {
    await root.send(new PutObjectCommand({ Bucket: "shared", Key: key, Body: key }));
  }
  const admin = new AdminClient(svc.url);
  await admin.login();
  const boss = await createUser(admin, "boss", [ALL]);
  const reader = await createUser(admin, "reader", [
    { effect: "Allow", actions: ["read", "list"], resources: ["shared"] },
    { effect: "Deny", actions: ["*"], resources: ["shared/secret/*"] },
  ]);
  const homer = await createUser(admin, "homer", [
    {
      effect: "Allow",
      actions: ["read", "list", "write", "delete"],
      resources: ["data/home/${iam:username}/*"],
    },
  ]);
  return { svc, admin, boss, reader, homer };
}

Deno.test("iam: a matrix of operations × three users", async () => {
  const { svc, boss, reader, homer } = await setup();
  await using _svc = svc;
  const as = {
    boss: clientAs(svc, boss),
    reader: clientAs(svc, reader),
    homer: clientAs(svc, homer),
  };
  type Who = keyof typeof as;
  const ops: Record<string, (s3: S3Client) => Promise<unknown>> = {
    "GET data/home/homer/a.txt": (s3) =>
      s3.send(new GetObjectCommand({ Bucket: "data", Key: "home/homer/a.txt" })),
    "GET data/home/marge/b.txt": (s3) =>
      s3.send(new GetObjectCommand({ Bucket: "data", Key: "home/marge/b.txt" })),
    "GET shared/readme.txt": (s3) =>
      s3.send(new GetObjectCommand({ Bucket: "shared", Key: "readme.txt" })),
    "GET shared/secret/plans.txt (Deny)": (s3) =>
      s3.send(new GetObjectCommand({ Bucket: "shared", Key: "secret/plans.txt" })),
    "PUT data/home/homer/new.txt": (s3) =>
      s3.send(new PutObjectCommand({ Bucket: "data", Key: "home/homer/new.txt", Body: "x" })),
    "PUT data/other/new.txt": (s3) =>
      s3.send(new PutObjectCommand({ Bucket: "data", Key: "other/new.txt", Body: "x" })),
    "PUT shared/new.txt": (s3) =>
      s3.send(new PutObjectCommand({ Bucket: "shared", Key: "new.txt", Body: "x" })),
    "COPY shared/readme.txt → data/home/homer/copy.txt": (s3) =>
      s3.send(
        new CopyObjectCommand({
          Bucket: "data",
          Key: "home/homer/copy.txt",
          CopySource: "shared/readme.txt",
        }),
      ),
    "COPY data/home/homer/a.txt → data/home/homer/a2.txt": (s3) =>
      s3.send(
        new CopyObjectCommand({
          Bucket: "data",
          Key: "home/homer/a2.txt",
          CopySource: "data/home/homer/a.txt",
        }),
      ),
    "DELETE data/other/c.txt": (s3) =>
      s3.send(new DeleteObjectCommand({ Bucket: "data", Key: "other/c.txt" })),
    "LIST shared": (s3) => s3.send(new ListObjectsV2Command({ Bucket: "shared" })),
    "LIST data prefix home/homer/": (s3) =>
      s3.send(new ListObjectsV2Command({ Bucket: "data", Prefix: "home/homer/" })),
    "HEAD bucket data": (s3) => s3.send(new HeadBucketCommand({ Bucket: "data" })),
    "CREATE bucket": (s3) => s3.send(new CreateBucketCommand({ Bucket: "fresh-bucket" })),
  };
  const expected: Record<string, Record<Who, string>> = {
    "GET data/home/homer/a.txt": { boss: "ok", reader: "AccessDenied", homer: "ok" },
    "GET data/home/marge/b.txt": { boss: "ok", reader: "AccessDenied", homer: "AccessDenied" },
    "GET shared/readme.txt": { boss: "ok", reader: "ok", homer: "AccessDenied" },
    "GET shared/secret/plans.txt (Deny)": {
      boss: "ok",
      reader: "AccessDenied",
      homer: "AccessDenied",
    },
    "PUT data/home/homer/new.txt": { boss: "ok", reader: "AccessDenied", homer: "ok" },
    "PUT data/other/new.txt": { boss: "ok", reader: "AccessDenied", homer: "AccessDenied" },
    "PUT shared/new.txt": { boss: "ok", reader: "AccessDenied", homer: "AccessDenied" },
    "COPY shared/readme.txt → data/home/homer/copy.txt": {
      boss: "ok",
      reader: "AccessDenied",
      homer: "AccessDenied",
    },
    "COPY data/home/homer/a.txt → data/home/homer/a2.txt": {
      boss: "ok",
      reader: "AccessDenied",
      homer: "ok",
    },
    // boss deletes it last (the matrix runs homer and reader first).
    "DELETE data/other/c.txt": { boss: "ok", reader: "AccessDenied", homer: "AccessDenied" },
    "LIST shared": { boss: "ok", reader: "ok", homer: "AccessDenied" },
    "LIST data prefix home/homer/": { boss: "ok", reader: "AccessDenied", homer: "ok" },
    // A prefix-scoped user may list part of the bucket, so the bucket exists for it.
    "HEAD bucket data": { boss: "ok", reader: "AccessDenied", homer: "ok" },
    "CREATE bucket": { boss: "ok", reader: "AccessDenied", homer: "AccessDenied" },
  };
  const got: Record<string, Record<string, string>> = {};
  for (const [name, run] of Object.entries(ops)) {
    got[name] = {};
    for (const who of ["homer", "reader", "boss"] as Who[]) {
      got[name][who] = await outcome(() => run(as[who]));
    }
  }
  assert.deepEqual(got, expected);

  // The decisions are counted by outcome; the users and index version are exported.
  const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
  const sample = (pattern: RegExp) => Number(pattern.exec(metrics)?.[1] ?? NaN);
  assert.ok(sample(/svc_iam_decisions_total\{decision="deny",reason="no_match"\} (\d+)/) > 10);
  assert.ok(sample(/svc_iam_decisions_total\{decision="deny",reason="explicit_deny"\} (\d+)/) >= 1);
  assert.ok(sample(/svc_iam_decisions_total\{decision="allow",reason="allow"\} (\d+)/) > 10);
  assert.equal(sample(/svc_iam_users (\d+)/), 3);
  assert.ok(sample(/svc_iam_index_rebuilds_total (\d+)/) >= 4);
});

Deno.test("iam: listings show only what a user may list; common prefixes leak nothing", async () => {
  const { svc, reader, homer } = await setup();
  await using _svc = svc;
  const homerS3 = clientAs(svc, homer);
  // ListBuckets is open to every IAM user and filtered to the buckets it may list in.
  const buckets = async (s3: S3Client) =>
    ((await s3.send(new ListBucketsCommand({}))).Buckets ?? []).map((b) => b.Name).sort();
  assert.deepEqual(await buckets(homerS3), ["data"]);
  assert.deepEqual(await buckets(clientAs(svc, reader)), ["shared"]);
  assert.deepEqual(await buckets(svc.client()), ["data", "shared"]);

  // homer lists the whole bucket: only his home shows, and the delimiter view rolls it up
  // without naming other/ or marge's home.
  const all = await homerS3.send(new ListObjectsV2Command({ Bucket: "data" }));
  assert.deepEqual((all.Contents ?? []).map((o) => o.Key), ["home/homer/a.txt"]);
  const top = await homerS3.send(new ListObjectsV2Command({ Bucket: "data", Delimiter: "/" }));
  assert.deepEqual((top.CommonPrefixes ?? []).map((p) => p.Prefix), ["home/"]);
  assert.deepEqual(top.Contents ?? [], []);
  const homes = await homerS3.send(
    new ListObjectsV2Command({ Bucket: "data", Prefix: "home/", Delimiter: "/" }),
  );
  assert.deepEqual((homes.CommonPrefixes ?? []).map((p) => p.Prefix), ["home/homer/"]);

  // Pages stay correct through the filter: one key a page, every key of homer's once.
  const root = svc.client();
  for (let i = 0; i < 4; i++) {
    await root.send(new PutObjectCommand({ Bucket: "data", Key: `home/homer/p${i}`, Body: "p" }));
    await root.send(new PutObjectCommand({ Bucket: "data", Key: `home/marge/p${i}`, Body: "p" }));
  }
  const paged: string[] = [];
  let token: string | undefined;
  do {
    const page = await homerS3.send(
      new ListObjectsV2Command({ Bucket: "data", MaxKeys: 1, ContinuationToken: token }),
    );
    paged.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.NextContinuationToken;
  } while (token);
  assert.deepEqual(paged, ["home/homer/a.txt", ...[0, 1, 2, 3].map((i) => `home/homer/p${i}`)]);

  // The reader's Deny on secret/ hides it from the listing of the bucket it may read.
  const shared = await clientAs(svc, reader).send(new ListObjectsV2Command({ Bucket: "shared" }));
  assert.deepEqual((shared.Contents ?? []).map((o) => o.Key), ["docs/guide.txt", "readme.txt"]);

  // DeleteObjects judges each key: homer's own goes, marge's stays with AccessDenied.
  const deleted = await homerS3.send(
    new DeleteObjectsCommand({
      Bucket: "data",
      Delete: { Objects: [{ Key: "home/homer/p0" }, { Key: "home/marge/p0" }] },
    }),
  );
  assert.deepEqual((deleted.Deleted ?? []).map((d) => d.Key), ["home/homer/p0"]);
  assert.deepEqual(
    (deleted.Errors ?? []).map((e) => [e.Key, e.Code]),
    [["home/marge/p0", "AccessDenied"]],
  );
});

Deno.test("iam: a POST form is judged on the key its policy names, as its signer", async () => {
  const { svc, homer } = await setup();
  await using _svc = svc;
  const keys = { accessKeyId: homer.access_key_id, secretAccessKey: homer.secret_access_key };
  const post = (key: string) =>
    fetch(`${svc.url}/data`, {
      method: "POST",
      body: signedPostForm("data", key, "form", {}, keys),
    });
  const own = await post("home/homer/form.txt");
  assert.equal(own.status, 204, await own.text());
  const other = await post("home/marge/form.txt");
  assert.equal(other.status, 403);
  assert.match(await other.text(), /AccessDenied/);
  const root = svc.client();
  await assert.rejects(
    root.send(new GetObjectCommand({ Bucket: "data", Key: "home/marge/form.txt" })),
    (err: Error) => err.name === "NoSuchKey",
  );
});

Deno.test("iam: aws:SourceIp conditions hold", async () => {
  const { svc, admin } = await setup();
  await using _svc = svc;
  const local = await createUser(admin, "local-only", [{
    effect: "Allow",
    actions: ["read", "list"],
    resources: ["shared"],
    conditions: { IpAddress: { "aws:SourceIp": ["127.0.0.0/8", "::1/128"] } },
  }]);
  const remote = await createUser(admin, "office-only", [{
    effect: "Allow",
    actions: ["read", "list"],
    resources: ["shared"],
    conditions: { IpAddress: { "aws:SourceIp": ["10.20.0.0/16"] } },
  }]);
  const get = (s3: S3Client) =>
    outcome(() => s3.send(new GetObjectCommand({ Bucket: "shared", Key: "readme.txt" })));
  assert.equal(await get(clientAs(svc, local)), "ok");
  assert.equal(await get(clientAs(svc, remote)), "AccessDenied");
  // X-Forwarded-For is not believed without trust_proxy_headers: a client cannot pick its IP.
  const forged = clientAs(svc, remote);
  forged.middlewareStack.add(
    (next) => (args) => {
      (args.request as { headers: Record<string, string> }).headers["x-forwarded-for"] =
        "10.20.1.1";
      return next(args);
    },
    { step: "build" },
  );
  assert.equal(await get(forged), "AccessDenied");
});

Deno.test("iam: disable, rotate and delete take effect on the next request", async () => {
  const { svc, admin, reader } = await setup();
  await using _svc = svc;
  const get = (s3: S3Client) =>
    outcome(() => s3.send(new GetObjectCommand({ Bucket: "shared", Key: "readme.txt" })));
  const version = async () =>
    (await admin.json<{ version: number }>("GET", "/iam/version")).version;
  assert.equal(await get(clientAs(svc, reader)), "ok");

  const before = await version();
  await admin.json("PUT", `/users/${reader.id}`, { enabled: false });
  assert.ok(await version() > before, "the index was rebuilt");
  assert.equal(await get(clientAs(svc, reader)), "InvalidAccessKeyId");
  await admin.json("PUT", `/users/${reader.id}`, { enabled: true });
  assert.equal(await get(clientAs(svc, reader)), "ok");

  const rotated = await admin.json<CreatedUser>("POST", `/users/${reader.id}/rotate-keys`);
  assert.notEqual(rotated.access_key_id, reader.access_key_id);
  assert.equal(await get(clientAs(svc, reader)), "InvalidAccessKeyId");
  assert.equal(await get(clientAs(svc, rotated)), "ok");

  // A permission change applies to the next request too.
  await admin.json("PUT", `/users/${reader.id}`, { permissions: [] });
  assert.equal(await get(clientAs(svc, rotated)), "AccessDenied");

  await admin.json("DELETE", `/users/${reader.id}`);
  assert.equal(await get(clientAs(svc, rotated)), "InvalidAccessKeyId");
  // The bootstrap key is untouched by all of it.
  assert.equal(await get(svc.client()), "ok");
});

Deno.test("iam: users and their keys survive a restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-iam-restart-" });
  try {
    const { svc, homer } = await setup(dataDir);
    await svc.stop();
    await using again = await startSvc({ dataDir });
    const got = await clientAs(again, homer).send(
      new GetObjectCommand({ Bucket: "data", Key: "home/homer/a.txt" }),
    );
    assert.equal(await got.Body!.transformToString(), "home/homer/a.txt");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "iam: awscli signs as an IAM user; its permissions decide",
  ignore: !(await awsAvailable()),
  async fn() {
    const { svc, reader } = await setup();
    await using _svc = svc;
    await using cli = await awsCli(svc.url, {
      accessKeyId: reader.access_key_id,
      secretAccessKey: reader.secret_access_key,
    });
    const work = cli.work;
    {
      await Deno.writeTextFile(`${work}/upload.txt`, "from the cli");
      const aws = (...args: string[]) => cli.run(args);
      const listed = await aws("s3", "ls", "s3://shared/", "--recursive");
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /readme\.txt/);
      assert.doesNotMatch(listed.stdout, /secret/);
      const buckets = await aws("s3", "ls");
      assert.equal(buckets.code, 0, buckets.stderr);
      assert.match(buckets.stdout, /shared/);
      assert.doesNotMatch(buckets.stdout, /\bdata\b/);
      const upload = await aws("s3", "cp", `${work}/upload.txt`, "s3://shared/upload.txt");
      assert.notEqual(upload.code, 0);
      assert.match(upload.stderr, /AccessDenied/);
    }
  },
});
