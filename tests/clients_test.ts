/**
 * Black-box tests with s3cmd and rclone, each skipped cleanly when not installed (CI installs
 * both from Debian when it can). Each runs with a clean environment and its own config file:
 * bucket creation, a 30 MB upload (s3cmd sends it multipart), keys with spaces, `+` and unicode,
 * listing, download compared byte for byte, checksums, removal, and a retry of a failed
 * DeleteBucket (same request within a second, which replay detection must let through).
 */
import assert from "node:assert/strict";
import { ACCESS_KEY, randomBytes, SECRET_KEY, startSvc } from "./helpers/svc.ts";

async function available(command: string): Promise<boolean> {
  try {
    return (await new Deno.Command(command, { args: ["--version"], stdout: "null", stderr: "null" })
      .output()).success;
  } catch {
    return false;
  }
}

const hasS3cmd = await available("s3cmd");
const hasRclone = await available("rclone");

async function run(command: string, args: string[], home: string) {
  const output = await new Deno.Command(command, {
    args,
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const text = new TextDecoder();
  return { code: output.code, out: text.decode(output.stdout) + text.decode(output.stderr) };
}

async function withWorkDir(work: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-clients-" });
  try {
    await work(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "s3cmd: mb, multipart put, odd keys, ls, get, info, del, rb retried after BucketNotEmpty",
  ignore: !hasS3cmd,
  fn: () =>
    withWorkDir(async (dir) => {
      await using svc = await startSvc({ env: { SVC_REPLAY_WINDOW_SECS: "2" } });
      const config = `${dir}/s3cfg`;
      await Deno.writeTextFile(
        config,
        `[default]\naccess_key = ${ACCESS_KEY}\nsecret_key = ${SECRET_KEY}\n` +
          `host_base = 127.0.0.1:${svc.port}\nhost_bucket = 127.0.0.1:${svc.port}\n` +
          `use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n`,
      );
      const big = randomBytes(30_000_000);
      await Deno.writeFile(`${dir}/big.bin`, big);
      await Deno.writeTextFile(`${dir}/small file+ü.txt`, "small");
      const s3cmd = (...args: string[]) => run("s3cmd", ["-c", config, ...args], dir);
      const ok = async (...args: string[]) => {
        const result = await s3cmd(...args);
        assert.equal(result.code, 0, `s3cmd ${args.join(" ")}:\n${result.out}`);
        return result.out;
      };
      await ok("mb", "s3://s3cmd-bucket");
      await ok("put", `${dir}/big.bin`, "s3://s3cmd-bucket/dir/big.bin");
      await ok("put", `${dir}/small file+ü.txt`, "s3://s3cmd-bucket/dir/small file+ü.txt");
      const listing = await ok("ls", "-r", "s3://s3cmd-bucket");
      assert.match(listing, /30000000\s+s3:\/\/s3cmd-bucket\/dir\/big\.bin/);
      assert.match(listing, /5\s+s3:\/\/s3cmd-bucket\/dir\/small file\+ü\.txt/);
      await ok("get", "--force", "s3://s3cmd-bucket/dir/big.bin", `${dir}/big.back`);
      assert.deepEqual(await Deno.readFile(`${dir}/big.back`), big);
      assert.match(await ok("info", "s3://s3cmd-bucket/dir/small file+ü.txt"), /File size: 5/);
      // rb on a non-empty bucket fails; the same request right after emptying it must pass.
      assert.notEqual((await s3cmd("rb", "s3://s3cmd-bucket")).code, 0);
      await ok("del", "--recursive", "--force", "s3://s3cmd-bucket");
      await ok("rb", "s3://s3cmd-bucket");
      assert.doesNotMatch(await ok("ls"), /s3cmd-bucket/);
    }),
});

Deno.test({
  name: "rclone: mkdir, copy a tree up and back, check, purge",
  ignore: !hasRclone,
  fn: () =>
    withWorkDir(async (dir) => {
      await using svc = await startSvc();
      const config = `${dir}/rclone.conf`;
      await Deno.writeTextFile(
        config,
        `[svc]\ntype = s3\nprovider = Other\naccess_key_id = ${ACCESS_KEY}\n` +
          `secret_access_key = ${SECRET_KEY}\nendpoint = ${svc.url}\nregion = us-east-1\n` +
          `force_path_style = true\n`,
      );
      await Deno.mkdir(`${dir}/tree/sub`, { recursive: true });
      const big = randomBytes(12_000_000);
      await Deno.writeFile(`${dir}/tree/sub/big.bin`, big);
      await Deno.writeTextFile(`${dir}/tree/a b+c.txt`, "a");
      await Deno.writeTextFile(`${dir}/tree/sub/ü.txt`, "ü");
      const rclone = (...args: string[]) => run("rclone", ["--config", config, ...args], dir);
      const ok = async (...args: string[]) => {
        const result = await rclone(...args);
        assert.equal(result.code, 0, `rclone ${args.join(" ")}:\n${result.out}`);
        return result.out;
      };
      await ok("mkdir", "svc:rclone-bucket");
      await ok("copy", `${dir}/tree`, "svc:rclone-bucket/t");
      const listing = await ok("ls", "svc:rclone-bucket");
      assert.match(listing, /12000000 t\/sub\/big\.bin/);
      assert.match(listing, /t\/a b\+c\.txt/);
      assert.match(await ok("check", `${dir}/tree`, "svc:rclone-bucket/t"), /0 differences found/);
      await ok("copy", "svc:rclone-bucket/t", `${dir}/back`);
      assert.deepEqual(await Deno.readFile(`${dir}/back/sub/big.bin`), big);
      assert.equal(await Deno.readTextFile(`${dir}/back/sub/ü.txt`), "ü");
      await ok("purge", "svc:rclone-bucket");
      assert.doesNotMatch(await ok("lsd", "svc:"), /rclone-bucket/);
    }),
});
