/**
 * Black-box tests of public prefixes (`storage.buckets.<bucket>.public_prefixes` and
 * `public: true`): anonymous GET, HEAD and listings only under the public prefixes, listings
 * filtered entry by entry, writes always signed, signed requests unaffected.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { assertError } from "./helpers/assertions.ts";
import { ACCESS_KEY, SECRET_KEY, signedFetch, startSvc } from "./helpers/svc.ts";

const CONFIG = `
storage:
  buckets:
    dist:
      public_prefixes: ["releases/", "docs/guide/"]
    site:
      public: true
`;

const DIST_KEYS = [
  "README",
  "docs/guide/intro.md",
  "docs/internal/notes.md",
  "releases-internal/plan.txt",
  "releases-internal/y/z.txt",
  "releases/v1.tar",
  "releases/v2/a.txt",
  "releases/v2/b.txt",
];

/** The keys and common prefixes of a ListObjects(V2) document. */
function listed(xml: string) {
  const all = (tag: string) =>
    [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, "g"))].map((m) => m[1]);
  return {
    keys: all("Key"),
    prefixes: [...xml.matchAll(/<CommonPrefixes><Prefix>([^<]*)<\/Prefix>/g)].map((m) => m[1]),
    truncated: /<IsTruncated>true<\/IsTruncated>/.test(xml),
    token: /<NextContinuationToken>([^<]*)</.exec(xml)?.[1],
    marker: /<NextMarker>([^<]*)</.exec(xml)?.[1],
  };
}

Deno.test("public prefixes: anonymous reads and listings only under the public prefixes", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-public-" });
  await Deno.writeTextFile(`${dataDir}/svc.yaml`, CONFIG);
  try {
    await using svc = await startSvc({ dataDir });
    const s3 = svc.client();
    for (const bucket of ["dist", "site", "private"]) {
      await s3.send(new S3.CreateBucketCommand({ Bucket: bucket }));
    }
    for (const key of DIST_KEYS) {
      await s3.send(new S3.PutObjectCommand({ Bucket: "dist", Key: key, Body: `body of ${key}` }));
    }
    await s3.send(new S3.PutObjectCommand({ Bucket: "site", Key: "index.html", Body: "<p>" }));
    await s3.send(new S3.PutObjectCommand({ Bucket: "private", Key: "p", Body: "secret" }));
    const anon = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

    await t.step("the whole-public bucket is logged as a warning at start", () => {
      assert.ok(
        svc.logs.some((line) => /"site" is entirely public/.test(line)),
        svc.logs.join("\n"),
      );
    });

    await t.step("anonymous GET and HEAD under a public prefix", async () => {
      const got = await anon("/dist/releases/v1.tar");
      assert.equal(got.status, 200);
      assert.equal(await got.text(), "body of releases/v1.tar");
      const head = await anon("/dist/releases/v2/a.txt", { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String("body of releases/v2/a.txt".length));
      const ranged = await anon("/dist/docs/guide/intro.md", { headers: { range: "bytes=0-3" } });
      assert.equal(ranged.status, 206);
      assert.equal(await ranged.text(), "body");
      await assertError(anon("/dist/releases/missing"), 404, "NoSuchKey");
    });

    await t.step("anonymous reads outside the public prefixes are refused", async () => {
      for (const key of ["releases-internal/plan.txt", "README", "docs/internal/notes.md"]) {
        await assertError(anon(`/dist/${key}`), 403, "AccessDenied");
        const head = await anon(`/dist/${key}`, { method: "HEAD" });
        assert.equal(head.status, 403);
      }
      await assertError(anon("/private/p"), 403, "AccessDenied");
      await assertError(anon("/private?list-type=2"), 403, "AccessDenied");
      // Subresources and bucket-level calls other than listings are not public reads.
      await assertError(anon("/dist/releases/v1.tar?acl"), 403, "AccessDenied");
      await assertError(anon("/dist?acl"), 403, "AccessDenied");
      await assertError(anon("/dist?uploads"), 403, "AccessDenied");
      assert.equal((await anon("/dist", { method: "HEAD" })).status, 403);
      await assertError(anon("/"), 403, "AccessDenied");
    });

    await t.step("anonymous writes are refused, even under a public prefix", async () => {
      await assertError(
        anon("/dist/releases/new", { method: "PUT", body: "x" }),
        403,
        "AccessDenied",
      );
      await assertError(anon("/dist/releases/v1.tar", { method: "DELETE" }), 403, "AccessDenied");
      await assertError(
        anon("/dist?delete", {
          method: "POST",
          body: "<Delete><Object><Key>releases/v1.tar</Key></Object></Delete>",
        }),
        403,
        "AccessDenied",
      );
      await assertError(anon("/dist/releases/mp?uploads", { method: "POST" }), 403, "AccessDenied");
      const still = await s3.send(
        new S3.HeadObjectCommand({ Bucket: "dist", Key: "releases/v1.tar" }),
      );
      assert.equal(still.$metadata.httpStatusCode, 200);
    });

    await t.step("anonymous listing without a delimiter shows only public keys", async () => {
      for (const query of ["list-type=2", "", "list-type=2&prefix=rel", "prefix=releases"]) {
        const res = await anon(`/dist?${query}`);
        assert.equal(res.status, 200, query);
        const { keys, prefixes } = listed(await res.text());
        const expected = DIST_KEYS.filter((k) =>
          (k.startsWith("releases/") || k.startsWith("docs/guide/")) &&
          k.startsWith(new URLSearchParams(query).get("prefix") ?? "")
        );
        assert.deepEqual(keys, expected, query);
        assert.deepEqual(prefixes, []);
      }
      const internal = listed(
        await (await anon("/dist?list-type=2&prefix=releases-internal/")).text(),
      );
      assert.deepEqual(internal.keys, []);
    });

    await t.step("anonymous listing with a delimiter hides private common prefixes", async () => {
      const root = listed(await (await anon("/dist?list-type=2&delimiter=/")).text());
      assert.deepEqual(root.keys, []); // README is private
      assert.deepEqual(root.prefixes, ["docs/", "releases/"]); // docs/ leads to docs/guide/
      const docs = listed(await (await anon("/dist?delimiter=/&prefix=docs/")).text());
      assert.deepEqual(docs.prefixes, ["docs/guide/"]);
      const releases = listed(
        await (await anon("/dist?list-type=2&delimiter=/&prefix=releases/")).text(),
      );
      assert.deepEqual(releases.keys, ["releases/v1.tar"]);
      assert.deepEqual(releases.prefixes, ["releases/v2/"]);
    });

    await t.step(
      "anonymous pagination: full pages, tokens and markers that never name private keys",
      async () => {
        const expected = DIST_KEYS.filter((k) =>
          k.startsWith("releases/") || k.startsWith("docs/guide/")
        );
        const seen: string[] = [];
        let token: string | undefined;
        do {
          const query = `list-type=2&max-keys=1${
            token ? `&continuation-token=${encodeURIComponent(token)}` : ""
          }`;
          const page = listed(await (await anon(`/dist?${query}`)).text());
          assert.equal(page.keys.length, 1);
          seen.push(...page.keys);
          token = page.truncated ? page.token : undefined;
          if (token) {
            const decoded = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
            assert.ok(expected.includes(decoded), `token names ${decoded}`);
          }
        } while (token);
        assert.deepEqual(seen, expected);

        const v1: string[] = [];
        let marker = "";
        for (;;) {
          const page = listed(
            await (await anon(`/dist?max-keys=2&marker=${encodeURIComponent(marker)}`)).text(),
          );
          v1.push(...page.keys);
          if (!page.truncated) break;
          assert.ok(expected.includes(page.marker!), `marker ${page.marker}`);
          marker = page.marker!;
        }
        assert.deepEqual(v1, expected);
      },
    );

    await t.step("signed requests see and read everything", async () => {
      const all = await s3.send(new S3.ListObjectsV2Command({ Bucket: "dist" }));
      assert.deepEqual(all.Contents?.map((o) => o.Key), DIST_KEYS);
      const internal = await s3.send(
        new S3.GetObjectCommand({ Bucket: "dist", Key: "releases-internal/plan.txt" }),
      );
      assert.equal(await internal.Body?.transformToString(), "body of releases-internal/plan.txt");
      const listing = await signedFetch(`${svc.url}/dist?list-type=2&delimiter=/`);
      const root = listed(await listing.text());
      assert.deepEqual(root.keys, ["README"]);
      assert.deepEqual(root.prefixes, ["docs/", "releases-internal/", "releases/"]);
      const presigner = new AwsClient({
        accessKeyId: ACCESS_KEY,
        secretAccessKey: SECRET_KEY,
        service: "s3",
        region: "us-east-1",
      });
      const presigned = await presigner.sign(`${svc.url}/private/p`, { aws: { signQuery: true } });
      assert.equal(await (await fetch(presigned.url)).text(), "secret");
    });

    await t.step("a bad signature on a public key is refused, not ignored", async () => {
      const forged = await anon("/dist/releases/v1.tar", {
        headers: {
          authorization:
            "AWS4-HMAC-SHA256 Credential=AKIATESTSVC000000000/20200101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00",
        },
      });
      assert.ok(forged.status === 403 || forged.status === 400, String(forged.status));
      await forged.body?.cancel();
    });

    await t.step("public: true opens the whole bucket to anonymous reads, not writes", async () => {
      const got = await anon("/site/index.html");
      assert.equal(await got.text(), "<p>");
      const listing = listed(await (await anon("/site?list-type=2")).text());
      assert.deepEqual(listing.keys, ["index.html"]);
      await assertError(anon("/site/x", { method: "PUT", body: "x" }), 403, "AccessDenied");
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
