/**
 * Issue 30: unchanged S3 clients pass their sessions against a fleet (three svc instances over
 * one S3 store behind HAProxy's round robin, tests/helpers/fleet.ts), so every request of a
 * session may land on another instance: awscli (a 50 MB multipart upload, a multipart copy, a
 * CopyObject), boto3's managed transfer, rclone and s3cmd multipart, and the SDK's managed
 * Upload through the load balancer and through a client that rotates the instances itself. Every
 * read is compared by sha256. Each client step skips with a message when the tool is missing;
 * the whole file skips without haproxy.
 */
import assert from "node:assert/strict";
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { createHash } from "node:crypto";
import { awsAvailable, awsCli } from "./helpers/awscli.ts";
import {
  fileSha256,
  type Fleet,
  fleetReason,
  partsPerInstance,
  startFleet,
  writeRandomFile,
} from "./helpers/fleet.ts";
import { ACCESS_KEY, SECRET_KEY } from "./helpers/svc.ts";

const BUCKET = "clients";
const MiB = 1024 * 1024;
const MEDIUM_SIZE = 24 * MiB + 12345;

async function available(command: string, args = ["--version"]): Promise<boolean> {
  try {
    return (await new Deno.Command(command, { args, stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return false;
  }
}

const hasAws = await awsAvailable();
const hasS3cmd = await available("s3cmd");
const hasRclone = await available("rclone");
const hasBoto3 = await available("python3", ["-c", "import boto3"]);
for (const [tool, has] of [["aws", hasAws], ["s3cmd", hasS3cmd], ["rclone", hasRclone]] as const) {
  if (!has && !fleetReason) console.warn(`[skip] ${tool} is not installed: its fleet step skipped`);
}
if (!hasBoto3 && !fleetReason) {
  console.warn("[skip] python3 with boto3 missing: boto3 step skipped");
}

async function run(command: string, args: string[], home: string) {
  const output = await new Deno.Command(command, {
    args,
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home },
    cwd: home,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(180_000),
  }).output();
  const text = new TextDecoder();
  return { code: output.code, out: text.decode(output.stdout) + text.decode(output.stderr) };
}

/** sha256 of an object read through `fleet`'s load balancer. */
async function objectSha256(fleet: Fleet, key: string): Promise<string> {
  const s3 = fleet.client();
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    const hash = createHash("sha256");
    for await (const chunk of out.Body as AsyncIterable<Uint8Array>) hash.update(chunk);
    return hash.digest("hex");
  } finally {
    s3.destroy();
  }
}

Deno.test({
  name: "fleet: unchanged clients pass their sessions through a round-robin load balancer",
  ignore: fleetReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using fleet = await startFleet({ buckets: [BUCKET] });
    const work = await Deno.makeTempDir({ prefix: "svc-fleet-clients-" });
    try {
      const medium = `${work}/medium.bin`;
      const mediumSha = await writeRandomFile(medium, MEDIUM_SIZE);

      await t.step({
        name: "awscli: 50 MB s3 cp up, multipart copy, s3api copy-object, reads back",
        ignore: !hasAws,
        async fn() {
          await using aws = await awsCli(fleet.url);
          const big = `${aws.work}/big.bin`;
          const bigSha = await writeRandomFile(big, 50_000_000);
          const ok = async (...args: string[]) => {
            const result = await aws.run(args);
            assert.equal(result.code, 0, `aws ${args.join(" ")}:\n${result.stderr}`);
            return result.stdout;
          };
          const parts = await partsPerInstance(fleet, async () => {
            await ok("s3", "cp", big, `s3://${BUCKET}/aws/big.bin`);
          });
          assert.ok(parts.every((n) => n > 0), `parts on every instance: ${parts}`);
          // Above the CLI's 8 MiB threshold a copy is multipart (UploadPartCopy).
          await ok("s3", "cp", `s3://${BUCKET}/aws/big.bin`, `s3://${BUCKET}/aws/copy.bin`);
          await ok(
            "s3api",
            "copy-object",
            "--bucket",
            BUCKET,
            "--key",
            "aws/copy2.bin",
            "--copy-source",
            `${BUCKET}/aws/big.bin`,
          );
          for (const key of ["big.bin", "copy.bin", "copy2.bin"]) {
            await ok("s3", "cp", `s3://${BUCKET}/aws/${key}`, `${aws.work}/back-${key}`);
            assert.equal(await fileSha256(`${aws.work}/back-${key}`), bigSha, `aws/${key}`);
            assert.equal(await objectSha256(fleet, `aws/${key}`), bigSha, `aws/${key} (SDK)`);
          }
        },
      });

      await t.step({
        name: "boto3: upload_file multipart and download_file",
        ignore: !hasBoto3,
        async fn() {
          const script = `
import sys
import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
endpoint, access, secret, bucket, src, dst = sys.argv[1:7]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
transfer = TransferConfig(multipart_threshold=5 * 1024 * 1024,
                          multipart_chunksize=5 * 1024 * 1024, max_concurrency=4)
s3.upload_file(src, bucket, "boto3/medium.bin", Config=transfer)
s3.download_file(bucket, "boto3/medium.bin", dst, Config=transfer)
print(s3.head_object(Bucket=bucket, Key="boto3/medium.bin")["ETag"])
`;
          let out = { code: 0, out: "" };
          const parts = await partsPerInstance(fleet, async () => {
            out = await run("python3", [
              "-c",
              script,
              fleet.url,
              ACCESS_KEY,
              SECRET_KEY,
              BUCKET,
              medium,
              `${work}/boto3.back`,
            ], work);
          });
          assert.equal(out.code, 0, out.out);
          assert.match(out.out, /-5"/, "24 MiB in 5 MiB chunks is a 5-part upload");
          assert.ok(parts.filter((n) => n > 0).length >= 2, `parts spread: ${parts}`);
          assert.equal(await fileSha256(`${work}/boto3.back`), mediumSha);
          assert.equal(await objectSha256(fleet, "boto3/medium.bin"), mediumSha);
        },
      });

      await t.step({
        name: "rclone: multipart copyto up and back, check",
        ignore: !hasRclone,
        async fn() {
          const config = `${work}/rclone.conf`;
          await Deno.writeTextFile(
            config,
            `[fleet]\ntype = s3\nprovider = Other\naccess_key_id = ${ACCESS_KEY}\n` +
              `secret_access_key = ${SECRET_KEY}\nendpoint = ${fleet.url}\nregion = us-east-1\n` +
              `force_path_style = true\n`,
          );
          const ok = async (...args: string[]) => {
            const result = await run("rclone", [
              "--config",
              config,
              "--s3-upload-cutoff",
              "5M",
              "--s3-chunk-size",
              "5M",
              "--retries",
              "1",
              "--low-level-retries",
              "1",
              ...args,
            ], work);
            assert.equal(result.code, 0, `rclone ${args.join(" ")}:\n${result.out}`);
            return result.out;
          };
          const parts = await partsPerInstance(fleet, async () => {
            await ok("copyto", medium, `fleet:${BUCKET}/rclone/medium.bin`);
          });
          assert.ok(parts.filter((n) => n > 0).length >= 2, `parts spread: ${parts}`);
          await ok("copyto", `fleet:${BUCKET}/rclone/medium.bin`, `${work}/rclone.back`);
          assert.equal(await fileSha256(`${work}/rclone.back`), mediumSha);
          const listing = await ok("lsl", `fleet:${BUCKET}/rclone`);
          assert.match(listing, new RegExp(`^\\s*${MEDIUM_SIZE} .* medium\\.bin$`, "m"));
        },
      });

      await t.step({
        name: "s3cmd: multipart put and get",
        ignore: !hasS3cmd,
        async fn() {
          const config = `${work}/s3cfg`;
          const host = new URL(fleet.url).host;
          await Deno.writeTextFile(
            config,
            `[default]\naccess_key = ${ACCESS_KEY}\nsecret_key = ${SECRET_KEY}\n` +
              `host_base = ${host}\nhost_bucket = ${host}\nuse_https = False\n` +
              `signature_v2 = False\nbucket_location = us-east-1\n`,
          );
          const ok = async (...args: string[]) => {
            const result = await run("s3cmd", ["-c", config, ...args], work);
            assert.equal(result.code, 0, `s3cmd ${args.join(" ")}:\n${result.out}`);
            return result.out;
          };
          const parts = await partsPerInstance(fleet, async () => {
            await ok("put", "--multipart-chunk-size-mb=5", medium, `s3://${BUCKET}/s3cmd/m.bin`);
          });
          assert.ok(parts.filter((n) => n > 0).length >= 2, `parts spread: ${parts}`);
          await ok("get", "--force", `s3://${BUCKET}/s3cmd/m.bin`, `${work}/s3cmd.back`);
          assert.equal(await fileSha256(`${work}/s3cmd.back`), mediumSha);
        },
      });

      for (const via of ["the load balancer", "a client rotating the instances"] as const) {
        await t.step(`SDK managed Upload through ${via}: parts on every instance`, async () => {
          const key = via === "the load balancer" ? "sdk/lb.bin" : "sdk/rotating.bin";
          const s3 = via === "the load balancer" ? fleet.client() : fleet.rotatingClient();
          try {
            using file = await Deno.open(medium);
            const parts = await partsPerInstance(fleet, async () => {
              await new Upload({
                client: s3,
                params: { Bucket: BUCKET, Key: key, Body: file.readable },
                partSize: 5 * MiB,
                queueSize: 3,
              }).done();
            });
            assert.ok(parts.every((n) => n > 0), `parts on every instance: ${parts}`);
            const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
            assert.equal(head.ContentLength, MEDIUM_SIZE);
            assert.equal(await objectSha256(fleet, key), mediumSha);
          } finally {
            s3.destroy();
          }
        });
      }
    } finally {
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});
