/**
 * Black-box test of the rclone sequence replay detection used to refuse: `rclone mkdir` then
 * `rclone copyto` within one second send the same signed CreateBucket; both must succeed. A relay
 * in front of svc proves the two requests really were signed in the same second.
 */
import assert from "node:assert/strict";
import { AwsClient } from "aws4fetch";
import { ACCESS_KEY, SECRET_KEY, startSvc } from "./helpers/svc.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const aws4 = new AwsClient({
  accessKeyId: ACCESS_KEY,
  secretAccessKey: SECRET_KEY,
  service: "s3",
  region: "us-east-1",
  retries: 0,
});
/** The default window (the harness turns detection off unless a test asks for it). */
const DEFAULT_WINDOW = { SVC_REPLAY_WINDOW_SECS: "600" };

async function hasCommand(command: string): Promise<boolean> {
  try {
    const probe = new Deno.Command(command, { args: ["version"], stdout: "null", stderr: "null" });
    return (await probe.output()).success;
  } catch {
    return false;
  }
}

/**
 * A TCP relay in front of svc that notes the x-amz-date of every CreateBucket passing through, so
 * the rclone test knows when its two commands really signed the same second.
 */
function sniffingRelay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const createDates = new Map<string, string[]>();
  const latin1 = new TextDecoder("latin1");
  const pipe = async (from: Deno.Conn, to: Deno.Conn, sniff: boolean) => {
    let seen = "";
    const buffer = new Uint8Array(65536);
    try {
      for (let n; (n = await from.read(buffer)) !== null;) {
        const chunk = buffer.slice(0, n);
        if (sniff) {
          seen += latin1.decode(chunk);
          const heads = /PUT \/([a-z0-9-]+)\/? HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/gi;
          for (let m; (m = heads.exec(seen)) !== null;) {
            const date = /^x-amz-date:\s*(\S+)/im.exec(m[2])?.[1] ?? "";
            createDates.set(m[1], [...createDates.get(m[1]) ?? [], date]);
          }
          seen = seen.slice(
            heads.lastIndex > 0 ? heads.lastIndex : Math.max(0, seen.length - 8192),
          );
        }
        for (let sent = 0; sent < chunk.length;) sent += await to.write(chunk.subarray(sent));
      }
    } catch { /* either side closed */ }
    try {
      to.closeWrite();
    } catch { /* already closed */ }
  };
  (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: "127.0.0.1", port });
      Promise.all([pipe(client, server, true), pipe(server, client, false)]).finally(() => {
        for (const conn of [client, server]) {
          try {
            conn.close();
          } catch { /* closed */ }
        }
      });
    }
  })().catch(() => {});
  const { port: relayPort } = listener.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${relayPort}`, createDates, close: () => listener.close() };
}

Deno.test({
  name: "replay: rclone mkdir then copyto within the same second",
  ignore: !await hasCommand("rclone"),
  fn: async () => {
    await using svc = await startSvc({ env: DEFAULT_WINDOW });
    const relay = sniffingRelay(svc.port);
    const dir = await Deno.makeTempDir({ prefix: "svc-rclone-replay-" });
    try {
      await Deno.writeTextFile(`${dir}/f.txt`, "rclone content");
      const env = {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: dir,
        RCLONE_CONFIG_SVC_TYPE: "s3",
        RCLONE_CONFIG_SVC_PROVIDER: "Other",
        RCLONE_CONFIG_SVC_ACCESS_KEY_ID: ACCESS_KEY,
        RCLONE_CONFIG_SVC_SECRET_ACCESS_KEY: SECRET_KEY,
        RCLONE_CONFIG_SVC_ENDPOINT: relay.url,
        RCLONE_CONFIG_SVC_FORCE_PATH_STYLE: "true",
        RCLONE_CONFIG_SVC_REGION: "us-east-1",
      };
      const rclone = async (...args: string[]) => {
        const out = await new Deno.Command("rclone", {
          args: [...args, "--low-level-retries", "1", "--retries", "1"],
          clearEnv: true,
          env,
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(60_000),
        }).output();
        const text = new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 0, `rclone ${args.join(" ")}:\n${text}`);
      };
      // Both commands send the same CreateBucket, the same signature only within one second:
      // start right after a second begins, and repeat until the relay saw both signed in one.
      // On a loaded machine rclone can take seconds to start, so every other attempt launches
      // copyto 100 ms after mkdir instead of after it exits (either command's request may then
      // come first; both must succeed).
      for (let attempt = 0; attempt < 10; attempt++) {
        await sleep(1000 - Date.now() % 1000 + 5);
        const bucket = `rclone-${attempt}`;
        const copy = () => rclone("copyto", `${dir}/f.txt`, `svc:${bucket}/f.txt`);
        if (attempt % 2 === 0) {
          await rclone("mkdir", `svc:${bucket}`);
          await copy();
        } else {
          const mkdir = rclone("mkdir", `svc:${bucket}`);
          await sleep(100);
          await Promise.all([mkdir, copy()]);
        }
        const cat = await fetch(await aws4.sign(`${svc.url}/${bucket}/f.txt`));
        assert.equal(await cat.text(), "rclone content");
        const dates = relay.createDates.get(bucket) ?? [];
        if (dates.length >= 2 && dates[0] !== "" && dates.every((d) => d === dates[0])) return;
      }
      assert.fail(
        `rclone never signed both CreateBuckets in one second: ${[...relay.createDates]}`,
      );
    } finally {
      relay.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
