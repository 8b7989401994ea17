/**
 * Black-box tests with the AWS CLI (`aws`), skipped cleanly when it is not installed: bucket
 * creation, a 20 MiB multipart upload and download, listings, a CLI-presigned URL fetched with
 * plain fetch, recursive removal, and a wrong secret refused. The CLI runs with a clean
 * environment: a temp HOME and AWS_CONFIG_FILE (path-style addressing), so no user config applies.
 */
import assert from "node:assert/strict";
import { HeadObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { assertError } from "./helpers/assertions.ts";
import { awsAvailable, awsCli } from "./helpers/awscli.ts";
import { randomBytes, SECRET_KEY, startSvc } from "./helpers/svc.ts";

const BUCKET = "cli-bucket";

const hasAws = await awsAvailable();

Deno.test({
  name: "awscli: mb, multipart cp both ways, ls, presign, rm --recursive",
  ignore: !hasAws,
  async fn(t) {
    await using svc = await startSvc();
    const s3 = svc.client();
    await using cli = await awsCli(svc.url);
    const work = cli.work;
    const aws = (args: string[], secret = SECRET_KEY, configFile = cli.config) =>
      cli.run(args, { secret, configFile });
    const ok = async (args: string[], configFile = cli.config): Promise<string> => {
      const result = await aws(args, SECRET_KEY, configFile);
      assert.equal(result.code, 0, `aws ${args.join(" ")}:\n${result.stdout}\n${result.stderr}`);
      return result.stdout;
    };

    try {
      const big = new Uint8Array(randomBytes(20 * 1024 * 1024));
      await Deno.writeFile(`${work}/big.bin`, big);
      await Deno.writeTextFile(`${work}/small.txt`, "small file with an awkward key\n");

      await t.step("aws s3 mb", async () => {
        await ok(["s3", "mb", `s3://${BUCKET}`]);
      });

      await t.step("aws s3 cp of 20 MiB up and back (multipart), bytes intact", async () => {
        await ok(["s3", "cp", `${work}/big.bin`, `s3://${BUCKET}/dir/big.bin`]);
        const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "dir/big.bin" }));
        assert.equal(head.ContentLength, big.length);
        assert.match(head.ETag ?? "", /-\d+"$/, "uploaded in parts");
        await ok(["s3", "cp", `s3://${BUCKET}/dir/big.bin`, `${work}/back.bin`]);
        assert.deepEqual(await Deno.readFile(`${work}/back.bin`), big);
        const key = "dir/with space+plus~é.txt";
        await ok(["s3", "cp", `${work}/small.txt`, `s3://${BUCKET}/${key}`]);
        await ok(["s3", "cp", `s3://${BUCKET}/${key}`, `${work}/small-back.txt`]);
        assert.equal(
          await Deno.readTextFile(`${work}/small-back.txt`),
          await Deno.readTextFile(`${work}/small.txt`),
        );
        const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
        assert.deepEqual(listed.Contents?.map((c) => c.Key).sort(), ["dir/big.bin", key]);
      });

      await t.step("aws s3 ls: buckets, prefixes and objects", async () => {
        assert.match(await ok(["s3", "ls"]), new RegExp(`\\s${BUCKET}\\n`));
        assert.match(await ok(["s3", "ls", `s3://${BUCKET}`]), /PRE dir\//);
        const objects = await ok(["s3", "ls", "--recursive", `s3://${BUCKET}`]);
        assert.match(objects, new RegExp(`\\s${big.length} dir/big\\.bin\\n`));
        assert.match(objects, /dir\/with space\+plus~é\.txt/);
      });

      await t.step("aws s3 presign, fetched with plain fetch", async () => {
        const presign = ["s3", "presign", `s3://${BUCKET}/dir/big.bin`, "--expires-in", "300"];
        const url = (await ok(presign)).trim();
        if (url.includes("AWSAccessKeyId=")) {
          // AWS CLI v1 presigns with SigV2 unless told otherwise; svc is SigV4-only (as S3's
          // newer regions), so it refuses that URL as S3 does and the CLI must be told s3v4.
          await assertError(fetch(url), 400, "InvalidRequest");
          const v4 = `${work}/config-s3v4`;
          await Deno.writeTextFile(
            v4,
            "[default]\ns3 =\n  addressing_style = path\n  signature_version = s3v4\n",
          );
          const v4url = (await ok(presign, v4)).trim();
          assert.match(v4url, /X-Amz-Algorithm=AWS4-HMAC-SHA256/);
          const res = await fetch(v4url);
          assert.equal(res.status, 200, v4url);
          assert.deepEqual(new Uint8Array(await res.arrayBuffer()), big);
          return;
        }
        const res = await fetch(url);
        assert.equal(res.status, 200, url);
        assert.deepEqual(new Uint8Array(await res.arrayBuffer()), big);
      });

      await t.step("a wrong secret is refused and stores nothing", async () => {
        const result = await aws(
          ["s3", "cp", `${work}/small.txt`, `s3://${BUCKET}/wrong.txt`],
          "x",
        );
        assert.notEqual(result.code, 0);
        assert.match(result.stderr, /SignatureDoesNotMatch|403/);
        const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "wrong" }));
        assert.equal(listed.KeyCount, 0);
      });

      await t.step("aws s3 rm --recursive, then rb", async () => {
        await ok(["s3", "rm", "--recursive", `s3://${BUCKET}`]);
        assert.equal((await ok(["s3", "ls", "--recursive", `s3://${BUCKET}`])).trim(), "");
        const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }));
        assert.equal(listed.KeyCount, 0);
        await ok(["s3", "rb", `s3://${BUCKET}`]);
        assert.doesNotMatch(await ok(["s3", "ls"]), new RegExp(BUCKET));
      });
    } finally {
      s3.destroy();
    }
  },
});
