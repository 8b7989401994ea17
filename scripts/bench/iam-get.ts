/**
 * 4 KiB GET rate through the real server for an IAM user with 50 permissions among 10,000 users
 * in the config DB, against the bootstrap key on the same server in the same run (goal ≥ 0.9×).
 * Both clients sign every request (aws4fetch, header-signed, UNSIGNED-PAYLOAD), so the client's
 * signing cost is the same on both sides; rounds alternate to spread the machine's noise.
 *
 *   node_modules/.bin/deno run -A scripts/bench/iam-get.ts [--users 10000] [--gets 3000]
 *     [--rounds 3] [--clients 16]
 */
import { AwsClient } from "aws4fetch";
import { openConfigDb } from "../../src/db/config-db.ts";
import { IamStore } from "../../src/db/iam-store.ts";
import type { Permission } from "../../src/iam/model.ts";
import { drain, fmt, peakRss, startProcess } from "./lib.ts";

function numberOption(name: string, fallback: number): number {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
}

const userCount = numberOption("--users", 10_000);
const gets = numberOption("--gets", 3000);
const rounds = numberOption("--rounds", 3);
const clients = numberOption("--clients", 16);

// The hash of tests/helpers/admin.ts (bcrypt cost 4): the DB key derives from it.
const HASH = "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S";
const BOOT = { accessKeyId: "AKIABENCHBOOTSTRAP00", secretAccessKey: "bench-bootstrap-secret" };
const BUCKET = "bench";

/** 49 grants elsewhere, then the one that allows the bench bucket: the worst place for it. */
function fiftyPermissions(): Permission[] {
  const permissions: Permission[] = Array.from({ length: 49 }, (_, i) => ({
    effect: "Allow",
    actions: ["read", "list"],
    resources: [`other-${i}/home/\${iam:username}/*`],
    conditions: i % 10 === 0 ? { IpAddress: { "aws:SourceIp": ["10.0.0.0/8"] } } : undefined,
  }));
  permissions.push({ effect: "Allow", actions: ["read", "list"], resources: [`${BUCKET}/*`] });
  return permissions;
}

async function seedUsers(dataDir: string) {
  const db = await openConfigDb({ dir: `${dataDir}/.svc`, passwordHash: HASH });
  const store = new IamStore(db);
  const started = performance.now();
  for (let i = 0; i < userCount - 1; i++) {
    await store.createUser({
      name: `user-${i}`,
      permissions: [{ effect: "Allow", actions: ["read"], resources: [`b${i % 100}/*`] }],
    });
  }
  const measured = await store.createUser({ name: "measured", permissions: fiftyPermissions() });
  await db.close();
  console.log(`seeded ${userCount} users in ${fmt((performance.now() - started) / 1000)} s`);
  return { accessKeyId: measured.access_key_id, secretAccessKey: measured.secret_access_key };
}

async function getRate(url: string, signer: AwsClient): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < gets) {
      const i = next++;
      const res = await signer.fetch(`${url}/${BUCKET}/o${i % 500}`);
      if (res.status !== 200 || (await drain(res.body)) !== 4096) {
        throw new Error(`GET answered ${res.status}`);
      }
    }
  }));
  return gets / ((performance.now() - started) / 1000);
}

const dataDir = await Deno.makeTempDir({ prefix: "svc-bench-iam-" });
try {
  const user = await seedUsers(dataDir);
  const root = new URL("../../", import.meta.url).pathname;
  const server = await startProcess([`${root}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: dataDir,
    SVC_ACCESS_KEY_ID: BOOT.accessKeyId,
    SVC_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
    SVC_BOOTSTRAP_PASSWORD_HASH: HASH,
    SVC_LOG_LEVEL: "info",
  }, dataDir);
  try {
    const signed = (creds: typeof BOOT) =>
      new AwsClient({ ...creds, service: "s3", region: "us-east-1" });
    const bootstrap = signed(BOOT);
    const iam = signed(user);
    const made = await bootstrap.fetch(`${server.url}/${BUCKET}`, { method: "PUT" });
    if (!made.ok) throw new Error(`CreateBucket answered ${made.status}`);
    const body = crypto.getRandomValues(new Uint8Array(4096));
    for (let i = 0; i < 500; i++) {
      const res = await bootstrap.fetch(`${server.url}/${BUCKET}/o${i}`, {
        method: "PUT",
        body,
        headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
      });
      if (!res.ok) throw new Error(`PUT answered ${res.status}`);
    }
    await getRate(server.url, iam); // warm-up: JIT, caches
    await getRate(server.url, bootstrap);
    const ratios: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      const boot = await getRate(server.url, bootstrap);
      const user = await getRate(server.url, iam);
      ratios.push(user / boot);
      console.log(
        `round ${round}: bootstrap ${fmt(boot, 0)} GET/s, IAM user ${fmt(user, 0)} GET/s, ` +
          `ratio ${fmt(user / boot, 2)}`,
      );
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    console.log(
      `median ratio ${fmt(sorted[Math.floor(sorted.length / 2)], 2)} (goal ≥ 0.90); ` +
        `server peak RSS ${fmt((await peakRss(server.pid)) / 2 ** 20)} MiB`,
    );
  } finally {
    await server.stop();
  }
} finally {
  await Deno.remove(dataDir, { recursive: true });
}
