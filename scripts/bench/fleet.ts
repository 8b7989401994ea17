/**
 * Issue 30, a fleet on one machine: three svc instances over one S3 store (a backing svc on a temp
 * directory, its bucket verbatim) against one of them, and a GET through the instance that wrote
 * an object against one through another instance. Sides alternate in slices inside each round
 * (lib.ts alternatingRates), so both see the same noise of a shared machine; ratios per round,
 * then median and spread.
 *
 * - 4 KiB PUT and GET, 64 MiB PUT and GET: aggregate rate with `--clients` concurrent clients
 *   sending every request to instance 0 ("1 instance") or each to the next of the three ("3
 *   instances"). Ratio: 3 instances / 1.
 * - Warm GETs, cross-instance: objects PUT through instance 1 or 2 and read once through both;
 *   then GETs through the instance that wrote each against GETs through the other one. Plain 4
 *   KiB objects and delta objects (the second version of a 4 MiB .tar series, one series written
 *   through each instance). Ratio: other / writer.
 *
 * The instances run with open access (SVC_AUTHENTICATION=none) so the clients are raw HTTP (Deno's
 * fetch streams request bodies slowly); the store checks SigV4 from the instances as S3 would.
 *
 *   node_modules/.bin/deno run -A scripts/bench/fleet.ts [--rounds 5] [--clients 6]
 *     [--small 600] [--large 6] [--warm 600]
 */
import { ADMIN_PASSWORD_HASH } from "../../tests/helpers/admin.ts";
import { ArtifactSeries } from "../../tests/helpers/tar.ts";
import {
  alternatingRates,
  drain,
  fmt,
  MiB,
  numberOption,
  rawPut,
  type Started,
  startProcess,
  timed,
} from "./lib.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const rounds = numberOption("--rounds", 5);
const clients = numberOption("--clients", 6);
const smallCount = numberOption("--small", 600);
const largeCount = numberOption("--large", 6);
const warmCount = numberOption("--warm", 600);
const BUCKET = "bench";
const KEY_ID = "AKIABENCHFLEET000000";
const SECRET = "bench-fleet-secret-key-000000000000000";

const dirs: string[] = [];
const servers: Started[] = [];

async function tempDir(prefix: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  dirs.push(dir);
  return dir;
}

/** The S3 store: a svc on a filesystem, keeping the bench bucket verbatim. */
async function startStore(): Promise<Started> {
  const dir = await tempDir("bench-fleet-store-");
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    `storage:\n  buckets:\n    ${BUCKET}:\n      compression: false\n`,
  );
  const store = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: `${dir}/svc.yaml`,
    SVC_ACCESS_KEY_ID: KEY_ID,
    SVC_SECRET_ACCESS_KEY: SECRET,
    SVC_REPLAY_WINDOW_SECS: "0",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
  }, dir);
  servers.push(store);
  return store;
}

/** One instance over the store, configured as every other. */
async function startInstance(store: Started): Promise<Started> {
  const dir = await tempDir("bench-fleet-svc-");
  await Deno.writeTextFile(
    `${dir}/svc.yaml`,
    `storage:\n  s3: ${store.url}\n  access_key_id: ${KEY_ID}\n  secret_access_key: ${SECRET}\n`,
  );
  const instance = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
    SVC_DATA_DIR: `${dir}/data`,
    SVC_CONFIG: `${dir}/svc.yaml`,
    SVC_AUTHENTICATION: "none",
    SVC_LOG_LEVEL: "info",
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
    SVC_BACKEND_LIST_FRESH_SECS: "0",
  }, dir);
  servers.push(instance);
  return instance;
}

async function put(url: string, size: number): Promise<void> {
  const { status, response } = await rawPut(url, size);
  if (status !== 200) throw new Error(`PUT ${url} answered ${status}: ${response.slice(0, 300)}`);
}

async function putBytes(url: string, body: Uint8Array<ArrayBuffer>): Promise<void> {
  const response = await fetch(url, { method: "PUT", body });
  await response.body?.cancel();
  if (response.status !== 200) throw new Error(`PUT ${url} answered ${response.status}`);
}

async function get(url: string): Promise<number> {
  const response = await fetch(url);
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`GET ${url} answered ${response.status}`);
  }
  return await drain(response.body);
}

/**
 * `n` operations from `clients` concurrent clients, the i-th to `targets[i % targets.length]`;
 * the seconds taken.
 */
async function hammer(
  targets: string[],
  n: number,
  op: (base: string, i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const { seconds } = await timed(() =>
    Promise.all(Array.from({ length: Math.min(clients, n) }, async () => {
      while (next < n) {
        const i = next++;
        await op(targets[i % targets.length], i);
      }
    }))
  );
  return seconds;
}

interface Row {
  measure: string;
  unit: string;
  a: string;
  b: string;
  ratios: number[];
  aRates: number[];
  bRates: number[];
}

const rows: Row[] = [];

/** Runs the rounds of one measure: side "on" is B, "off" is A; the ratio is B / A. */
async function measure(
  row: Omit<Row, "ratios" | "aRates" | "bRates">,
  count: number,
  run: (side: "a" | "b", prefix: string, n: number) => Promise<number>,
  scale = 1,
): Promise<void> {
  const out: Row = { ...row, ratios: [], aRates: [], bRates: [] };
  for (let index = 0; index < rounds; index++) {
    const rate = await alternatingRates(
      index,
      count,
      (side, prefix, n) => run(side === "on" ? "b" : "a", prefix, n),
    );
    out.aRates.push(rate.off * scale);
    out.bRates.push(rate.on * scale);
    out.ratios.push(rate.on / rate.off);
    console.error(`${row.measure} round ${index + 1}: ratio ${fmt(rate.on / rate.off, 2)}`);
  }
  rows.push(out);
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1];

try {
  const store = await startStore();
  const instances = [];
  for (let i = 0; i < 3; i++) instances.push(await startInstance(store));
  const one = [instances[0].url];
  const three = instances.map((s) => s.url);
  const response = await fetch(`${one[0]}/${BUCKET}`, { method: "PUT" });
  await response.body?.cancel();
  const objectUrl = (base: string, key: string) => `${base}/${BUCKET}/${key}`;

  // Warm-up: JIT, connections and first directories on every instance.
  await hammer(three, 90, (base, i) => put(objectUrl(base, `warm-${i}`), 4096));
  await hammer(three, 90, (base, i) => get(objectUrl(base, `warm-${i}`)));

  const sides = { a: one, b: three };
  const smallKeys = new Map<string, number>();
  await measure(
    { measure: "4 KiB PUT", unit: "PUT/s", a: "1 instance", b: "3 instances" },
    smallCount,
    (side, prefix, n) =>
      hammer(sides[side], n, (base, i) => {
        smallKeys.set(`${prefix}-${side}-${i}`, 0);
        return put(objectUrl(base, `s/${prefix}-${side}-${i}`), 4096);
      }),
  );
  const small = [...smallKeys.keys()];
  await measure(
    { measure: "4 KiB GET", unit: "GET/s", a: "1 instance", b: "3 instances" },
    smallCount,
    (side, _prefix, n) =>
      hammer(sides[side], n, (base, i) => get(objectUrl(base, `s/${small[i % small.length]}`))),
  );
  const large: string[] = [];
  await measure(
    { measure: "64 MiB PUT", unit: "MiB/s", a: "1 instance", b: "3 instances" },
    largeCount,
    (side, prefix, n) =>
      hammer(sides[side], n, (base, i) => {
        large.push(`l/${prefix}-${side}-${i}`);
        return put(objectUrl(base, `l/${prefix}-${side}-${i}`), 64 * MiB);
      }),
    64,
  );
  await measure(
    { measure: "64 MiB GET", unit: "MiB/s", a: "1 instance", b: "3 instances" },
    largeCount,
    (side, _prefix, n) =>
      hammer(sides[side], n, (base, i) => get(objectUrl(base, large[i % large.length]))),
    64,
  );
  // Delete the large objects: the store's disk is not the subject.
  for (const key of large) {
    const gone = await fetch(objectUrl(one[0], key), { method: "DELETE" });
    await gone.body?.cancel();
  }

  // Warm GETs. Instances 1 and 2 have served the same traffic so far (instance 0 served more:
  // every "1 instance" request), so they take both roles: even keys are written through 1, odd
  // ones through 2; "writer" reads each key through the instance that wrote it, "other" through
  // the other one of the two. Every key is read once through both first.
  const pair = [instances[1].url, instances[2].url];
  const writerOf = (k: number) => pair[k % 2];
  const otherOf = (k: number) => pair[(k + 1) % 2];
  const through = { a: writerOf, b: otherOf };
  const warmKeys = Array.from({ length: 200 }, (_, i) => `w/obj-${i}`);
  await hammer(pair, warmKeys.length, (_, k) => put(objectUrl(writerOf(k), warmKeys[k]), 4096));
  for (const pick of [writerOf, otherOf]) {
    await hammer(pair, warmKeys.length, (_, k) => get(objectUrl(pick(k), warmKeys[k])));
  }
  await measure(
    { measure: "warm 4 KiB GET", unit: "GET/s", a: "writer", b: "other instance" },
    warmCount,
    (side, _prefix, n) =>
      hammer(pair, n, (_, i) => get(objectUrl(through[side](i % 200), warmKeys[i % 200]))),
  );
  // Two artifact series, one written through each of the pair: version 2 is stored as a delta.
  const deltaKeys: string[] = [];
  for (let k = 0; k < 2; k++) {
    const series = new ArtifactSeries(8, 512 * 1024);
    await putBytes(objectUrl(writerOf(k), `d/s${k}/app-1.tar`), series.current());
    await putBytes(objectUrl(writerOf(k), `d/s${k}/app-2.tar`), series.next());
    deltaKeys.push(`d/s${k}/app-2.tar`);
    for (const pick of [writerOf, otherOf]) await get(objectUrl(pick(k), deltaKeys[k]));
  }
  await measure(
    { measure: "warm 4 MiB delta GET", unit: "GET/s", a: "writer", b: "other instance" },
    Math.max(20, Math.round(warmCount / 10)),
    (side, _prefix, n) =>
      hammer(pair, n, (_, i) => get(objectUrl(through[side](i % 2), deltaKeys[i % 2]))),
  );
} finally {
  for (const server of servers.reverse()) await server.stop().catch(() => {});
  for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

console.log(`\n${rounds} rounds, ${clients} concurrent clients\n`);
console.log("| measure | A | B | A (median) | B (median) | ratio B/A (median, spread) |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const row of rows) {
  const spread = `${fmt(Math.min(...row.ratios), 2)}-${fmt(Math.max(...row.ratios), 2)}`;
  console.log(
    `| ${row.measure} (${row.unit}) | ${row.a} | ${row.b} | ${fmt(median(row.aRates))} | ` +
      `${fmt(median(row.bRates))} | ${fmt(median(row.ratios), 2)} (${spread}) |`,
  );
}
