/**
 * Costs of the admin session plumbing (issue 13), in one run:
 * - session check: `AdminSessions.check` (HMAC + one indexed lookup in the encrypted DB), per call;
 * - event-loop stall during logins: the longest timer lag while 4 bcrypt (cost 12) checks run,
 *   on the password worker (what svc uses), with bcryptjs's async compare and with compareSync
 *   on the main thread: what S3 traffic would feel;
 * - rekey of a config DB holding N session rows, and the longest wait of a query issued during it.
 *
 *   deno run -A scripts/bench/admin-sessions.ts [--rows 10000] [--checks 20000]
 */
import bcrypt from "bcryptjs";
import { WorkerPasswordHasher } from "../../src/admin/session/password-hasher.ts";
import { AdminSessions } from "../../src/admin/session/sessions.ts";
import { openConfigDb } from "../../src/db/config-db.ts";
import { SessionStore } from "../../src/db/session-store.ts";

const arg = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const rows = arg("--rows", 10_000);
const checks = arg("--checks", 20_000);

const hashA = await bcrypt.hash("bench password one", 12);
const hashB = await bcrypt.hash("bench password two", 12);
const dir = await Deno.makeTempDir({ prefix: "svc-bench-sessions-" });
const db = await openConfigDb({ dir, passwordHash: hashA });
let hash = hashA;
const sessions = new AdminSessions({
  store: new SessionStore(db),
  passwordHash: () => hash,
  settings: () => ({ ttlHours: 4, secureCookies: true }),
});

// Fill the table, then time checks of one live cookie.
const started = performance.now();
for (let i = 0; i < rows; i++) {
  // Over TLS: a plain-HTTP admin login from another host logs a warning, not what is measured.
  await sessions.issue("$bootstrap", true, { ip: `10.0.${i >> 8}.${i & 255}`, https: true });
}
const fillMs = performance.now() - started;
const issued = await sessions.issue("$bootstrap", true, { ip: "127.0.0.1", https: true });
const cookie = issued.setCookie.split(";")[0].split("=")[1];
let t = performance.now();
for (let i = 0; i < checks; i++) {
  const result = await sessions.check(cookie, "127.0.0.1");
  if (!result.ok) throw new Error("check failed");
}
const checkUs = (performance.now() - t) * 1000 / checks;

/** The longest lag of a 1 ms timer while `work` runs. */
async function maxTimerLag(work: () => Promise<unknown>): Promise<number> {
  let worst = 0;
  let running = true;
  const probe = (async () => {
    while (running) {
      const before = performance.now();
      await new Promise((r) => setTimeout(r, 1));
      worst = Math.max(worst, performance.now() - before - 1);
    }
  })();
  await work();
  running = false;
  await probe;
  return worst;
}
const hasher = new WorkerPasswordHasher();
await hasher.compare("warm-up", hashA);
const workerLag = await maxTimerLag(() =>
  Promise.all([1, 2, 3, 4].map(() => hasher.compare("wrong", hashA)))
);
hasher.terminate();
const asyncLag = await maxTimerLag(() =>
  Promise.all([1, 2, 3, 4].map(() => bcrypt.compare("wrong", hashA)))
);
const syncLag = await maxTimerLag(async () => {
  await new Promise((r) => setTimeout(r, 5));
  for (let i = 0; i < 4; i++) bcrypt.compareSync("wrong", hashA);
});

// Rekey with a query loop running: how long the rekey takes and how long a query waits.
let worstQueryMs = 0;
let queries = 0;
let running = true;
const loop = (async () => {
  while (running) {
    const q = performance.now();
    await db.execute("SELECT COUNT(*) FROM sessions");
    worstQueryMs = Math.max(worstQueryMs, performance.now() - q);
    queries++;
    await new Promise((r) => setTimeout(r, 0));
  }
})();
await new Promise((r) => setTimeout(r, 50));
t = performance.now();
await db.rekey(hashB, () => Promise.resolve());
hash = hashB;
const rekeyMs = performance.now() - t;
await new Promise((r) => setTimeout(r, 50));
running = false;
await loop;
const size = (await Deno.stat(db.path)).size;
await db.close();
await Deno.remove(dir, { recursive: true });

console.log(JSON.stringify({
  rows,
  db_bytes: size,
  fill_ms_per_row: +(fillMs / rows).toFixed(3),
  session_check_us: +checkUs.toFixed(1),
  login_stall_ms_worker: +workerLag.toFixed(1),
  login_stall_ms_async_compare: +asyncLag.toFixed(1),
  login_stall_ms_sync_compare: +syncLag.toFixed(1),
  rekey_ms: +rekeyMs.toFixed(1),
  worst_query_wait_during_rekey_ms: +worstQueryMs.toFixed(1),
  queries_during_run: queries,
}));
