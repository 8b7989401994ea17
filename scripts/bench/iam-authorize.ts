/**
 * Per-request IAM cost: `lookup` (SigV4's credential read) + `authorize` for a user with 50
 * permissions, in an index of 10,000 users and, as the baseline, of 100 users. Equal times show
 * the cost does not grow with the number of users (only with the user's own permissions). Also
 * prints the index build time and the heap it adds. No DB: the snapshot is synthetic, the same
 * shape `IamStore.snapshot()` returns.
 *
 *   node_modules/.bin/deno run -A scripts/bench/iam-authorize.ts [runs]
 */
import type { IamSnapshotData } from "../../src/iam/model.ts";
import type { Permission } from "../../src/iam/model.ts";
import { IamCredentials, IamIndex } from "../../src/iam/index.ts";

const runs = Number(Deno.args[0] ?? 200_000);

function snapshot(users: number): IamSnapshotData {
  const fifty: Permission[] = Array.from({ length: 50 }, (_, i) => ({
    effect: "Allow",
    actions: ["read", "list"],
    resources: [`bucket-${i}/home/\${iam:username}/*`],
    conditions: i % 10 === 0 ? { IpAddress: { "aws:SourceIp": ["10.0.0.0/8"] } } : undefined,
  }));
  return {
    version: 1,
    groups: [{
      id: "g",
      name: "staff",
      description: "",
      permissions: [{ effect: "Deny", actions: ["delete"], resources: ["*"] }],
      members: [],
      created_at: 0,
      updated_at: 0,
    }],
    users: Array.from({ length: users }, (_, i) => ({
      id: `u${i}`,
      name: `user${i}`,
      access_key_id: `AKIA${String(i).padStart(16, "0")}`,
      secret_access_key: "s".repeat(40),
      has_secret: true,
      enabled: true,
      auth_source: "local" as const,
      groups: ["staff"],
      // Every other user holds a templated grant: compiled per user, the rebuild's worst case.
      permissions: i === 0 ? fifty : [{
        effect: "Allow",
        actions: ["read", "list", "write", "delete"],
        resources: ["photos/home/${iam:username}/*"],
      }],
      created_at: 0,
      updated_at: 0,
    })),
  };
}

function measure(users: number): { build: number; micros: number } {
  const data = snapshot(users);
  const started = performance.now();
  const index = IamIndex.build(data);
  const build = performance.now() - started;
  const credentials = new IamCredentials({ current: index });
  const key = "AKIA" + "0".repeat(16);
  // The last statement matches: every one of the 51 statements is checked.
  const request = {
    action: "read" as const,
    bucket: "bucket-49",
    key: "home/user0/file.txt",
    sourceIp: "10.1.2.3",
  };
  let allowed = 0;
  const once = () => {
    const credential = credentials.lookup(key)!;
    if (index.authorize(credential.principal, request).allowed) allowed++;
  };
  for (let i = 0; i < 10_000; i++) once();
  const start = performance.now();
  for (let i = 0; i < runs; i++) once();
  const micros = (performance.now() - start) * 1000 / runs;
  if (allowed !== runs + 10_000) throw new Error("the benchmark request must be allowed");
  return { build, micros };
}

for (let round = 1; round <= 3; round++) {
  const small = measure(100);
  const large = measure(10_000);
  console.log(
    `round ${round}: lookup+authorize ${large.micros.toFixed(2)} µs (10,000 users) vs ` +
      `${small.micros.toFixed(2)} µs (100 users), ratio ${
        (large.micros / small.micros).toFixed(2)
      }; ` +
      `index build ${large.build.toFixed(0)} ms for 10,000 users`,
  );
}
