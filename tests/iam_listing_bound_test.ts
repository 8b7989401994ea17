/**
 * A listing through a long run of keys the user may not read (issue 26): one request reads at most
 * 10,000 hidden keys (s3/ops/filtered-list.ts), then answers a truncated page whose token (v2) or
 * marker (v1) resumes after the last key read without naming it (sealed). The client pages on
 * and gets every visible key exactly once, in a bounded number of requests.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { clientAs, type CreatedUser } from "./helpers/iam.ts";
import { startSvc } from "./helpers/svc.ts";

const HIDDEN = 10_050;

Deno.test("iam listing: a run of hidden keys ends bounded pages with sealed positions", async () => {
  await using svc = await startSvc();
  const root = svc.client();
  await root.send(new CreateBucketCommand({ Bucket: "data" }));
  const keys = [
    "a/visible-1.txt",
    ...Array.from({ length: HIDDEN }, (_, i) => `b/${String(i).padStart(5, "0")}.hidden`),
    "c/visible-2.txt",
  ];
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < keys.length) {
      const key = keys[next++];
      await root.send(new PutObjectCommand({ Bucket: "data", Key: key, Body: "x" }));
    }
  }));
  const admin = new AdminClient(svc.url);
  await admin.login();
  // A Deny whose glob is not a prefix: every hidden key is read and judged, none jumped over.
  const user = await admin.json<CreatedUser>("POST", "/users", {
    name: "reader",
    permissions: [
      { effect: "Allow", actions: ["read", "list"], resources: ["data"] },
      { effect: "Deny", actions: ["read"], resources: ["data/*.hidden"] },
    ],
  }, 201);
  const s3 = clientAs(svc, user);

  for (const delimiter of [undefined, "/"]) {
    const pages: string[][] = [];
    const tokens: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({
          Bucket: "data",
          Delimiter: delimiter,
          ContinuationToken: token,
        }),
      );
      pages.push([
        ...(page.Contents ?? []).map((o) => o.Key!),
        ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!),
      ]);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
      if (token !== undefined) tokens.push(token);
    } while (token !== undefined && pages.length < 10);
    const want = delimiter ? ["a/", "c/"] : ["a/visible-1.txt", "c/visible-2.txt"];
    assert.deepEqual(pages.flat(), want, `delimiter ${delimiter}`);
    // The first request stops at its bound inside b/; the second ends the listing.
    assert.equal(pages.length, 2, JSON.stringify(pages));
    for (const sealed of tokens) {
      assert.ok(sealed.startsWith("svc1."), sealed);
      assert.ok(!atob(sealed.slice(5).replace(/-/g, "+").replace(/_/g, "/")).includes("hidden"));
    }
  }

  // v1: NextMarker carries the same sealed position, and a marker resumes from it.
  const first = await s3.send(new ListObjectsCommand({ Bucket: "data" }));
  assert.deepEqual((first.Contents ?? []).map((o) => o.Key), ["a/visible-1.txt"]);
  assert.equal(first.IsTruncated, true);
  assert.ok(first.NextMarker?.startsWith("svc1."), first.NextMarker);
  assert.ok(!first.NextMarker!.includes("hidden"));
  const second = await s3.send(
    new ListObjectsCommand({ Bucket: "data", Marker: first.NextMarker }),
  );
  assert.deepEqual((second.Contents ?? []).map((o) => o.Key), ["c/visible-2.txt"]);
  assert.equal(second.IsTruncated, false);

  // A sealed position this process did not make (altered, or from before a restart) is refused,
  // never read as a key to resume after.
  const forged = first.NextMarker!.slice(0, -4) +
    (first.NextMarker!.endsWith("AAAA") ? "BBBB" : "AAAA");
  const refused = async (run: () => Promise<unknown>) => {
    try {
      await run();
      return "ok";
    } catch (err) {
      return (err as Error).name;
    }
  };
  assert.equal(
    await refused(() => s3.send(new ListObjectsCommand({ Bucket: "data", Marker: forged }))),
    "InvalidArgument",
  );
  assert.equal(
    await refused(() =>
      s3.send(new ListObjectsV2Command({ Bucket: "data", ContinuationToken: forged }))
    ),
    "InvalidArgument",
  );
});
