/**
 * A 1,000-key ListObjectsV2 page through the real server for IAM users (issue 26: listings show
 * only what the user may read). One bucket of `--keys` plain keys (`d<n>/k<n>`, 100 folders);
 * pages timed: the first and a middle one (continuation token), max-keys 1000, for
 *
 * - `bootstrap`: the bootstrap key (never filtered);
 * - `reader`: read + list on the whole bucket (must stay on the unfiltered path);
 * - `denied`: the same with a Deny on one folder (a filtered listing, keys judged one by one);
 * - `home`: list on the bucket, read on one folder (the listing reads only that folder).
 *
 * Prints median ms per page. `--svc /path/to/checkout` times another checkout's server on the
 * same data (the "before" column); users get fresh names every run.
 *
 *   node_modules/.bin/deno run -A scripts/bench/iam-list.ts [--keys 20000] [--rounds 20]
 *     [--dir /tmp/svc-bench-iam-list] [--svc /work/main]
 */
import { AwsClient } from "aws4fetch";
import { numberOption, startProcess } from "./lib.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : fallback;
};
const keys = numberOption("--keys", 20_000);
const rounds = numberOption("--rounds", 20);
const dir = arg("--dir", "/tmp/svc-bench-iam-list");
const ROOT = new URL("../../", import.meta.url).pathname;
const SVC_ROOT = arg("--svc", ROOT).replace(/\/?$/, "/");
// The hash of tests/helpers/admin.ts (bcrypt cost 4) and its password.
const HASH = "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S";
const PASSWORD = "test-admin-password-123";
const BOOT = { accessKeyId: "AKIABENCHBOOTSTRAP00", secretAccessKey: "bench-bootstrap-secret" };
const BUCKET = "bench";

await Deno.mkdir(dir, { recursive: true });
const server = await startProcess([`${SVC_ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
  SVC_DATA_DIR: dir,
  SVC_ACCESS_KEY_ID: BOOT.accessKeyId,
  SVC_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
  SVC_BOOTSTRAP_PASSWORD_HASH: HASH,
  SVC_REPLAY_WINDOW_SECS: "0",
  SVC_LOG_LEVEL: "info",
}, dir);

const signer = (pair: { accessKeyId: string; secretAccessKey: string }) =>
  new AwsClient({ ...pair, service: "s3", region: "us-east-1" });

async function ok(response: Response): Promise<string> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status}: ${text}`);
  return text;
}

try {
  const boot = signer(BOOT);
  const head = await boot.fetch(`${server.url}/${BUCKET}`, { method: "HEAD" });
  await head.body?.cancel();
  if (head.status !== 200) {
    console.log(`storing ${keys} keys…`);
    await ok(await boot.fetch(`${server.url}/${BUCKET}`, { method: "PUT" }));
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < keys) {
        const n = next++;
        const key = `d${String(n % 100).padStart(2, "0")}/k${String(n).padStart(6, "0")}`;
        await ok(await boot.fetch(`${server.url}/${BUCKET}/${key}`, { method: "PUT", body: "x" }));
      }
    }));
  }

  const login = await fetch(`${server.url}/_/api/admin/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ password: PASSWORD }),
  });
  await login.body?.cancel();
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const suffix = crypto.randomUUID().slice(0, 8);
  const user = async (name: string, permissions: unknown[]) => {
    const res = await fetch(`${server.url}/_/api/admin/users`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: `${name}-${suffix}`, permissions }),
    });
    const made = JSON.parse(await ok(res));
    return signer({ accessKeyId: made.access_key_id, secretAccessKey: made.secret_access_key });
  };
  const clients: Record<string, AwsClient> = {
    bootstrap: boot,
    reader: await user("reader", [
      { effect: "Allow", actions: ["read", "list"], resources: [BUCKET] },
    ]),
    denied: await user("denied", [
      { effect: "Allow", actions: ["read", "list"], resources: [BUCKET] },
      { effect: "Deny", actions: ["read"], resources: [`${BUCKET}/d50/*`] },
    ]),
    home: await user("home", [
      { effect: "Allow", actions: ["list"], resources: [BUCKET] },
      { effect: "Allow", actions: ["read"], resources: [`${BUCKET}/d07/*`] },
    ]),
  };
  const middle = btoa(`d${String(50).padStart(2, "0")}/k`).replace(/=+$/, "");
  const results: string[] = [];
  for (const [name, client] of Object.entries(clients)) {
    for (const [page, query] of [["first", ""], ["middle", `&continuation-token=${middle}`]]) {
      const times: number[] = [];
      let count = 0;
      for (let i = 0; i < rounds + 2; i++) {
        const started = performance.now();
        const xml = await ok(
          await client.fetch(`${server.url}/${BUCKET}?list-type=2&max-keys=1000${query}`),
        );
        if (i >= 2) times.push(performance.now() - started); // two warm-up rounds
        count = (xml.match(/<Key>/g) ?? []).length;
      }
      times.sort((a, b) => a - b);
      results.push(
        `| ${name} | ${page} | ${count} | ${times[times.length >> 1].toFixed(1)} | ${
          times[0].toFixed(1)
        }–${times[times.length - 1].toFixed(1)} |`,
      );
    }
  }
  console.log(`server: ${SVC_ROOT}main.ts, ${keys} keys, ${rounds} rounds`);
  console.log("| principal | page | keys | median ms | range ms |\n|---|---|---|---|---|");
  console.log(results.join("\n"));
} finally {
  await server.stop();
}
