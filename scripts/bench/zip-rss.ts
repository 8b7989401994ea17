/**
 * Peak RSS of a ZIP download (`GET /_/api/admin/objects/zip`) against a plain GET of the same
 * bytes: the archive streams, so memory must not grow with the selection. Open access and an
 * open browse session keep the client simple.
 *
 *   node_modules/.bin/deno run -A scripts/bench/zip-rss.ts [--size-mib 512] [--objects 2]
 */
import { drain, fmt, GiB, MiB, peakRss, rawPut, startProcess, timed } from "./lib.ts";

function numberOption(name: string, fallback: number): number {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
}

const size = numberOption("--size-mib", 512) * MiB;
const objects = numberOption("--objects", 2);
const root = new URL("../../", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "svc-bench-zip-" });
const server = await startProcess([`${root}main.ts`, "--listen", "127.0.0.1:0"], {
  SVC_DATA_DIR: dir,
  SVC_AUTHENTICATION: "none",
  SVC_MAX_OBJECT_SIZE: String(4 * GiB),
  SVC_BOOTSTRAP_PASSWORD_HASH: "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S",
  SVC_LOG_LEVEL: "info",
}, dir);
try {
  await fetch(`${server.url}/zipbench`, { method: "PUT" }).then((r) => r.body?.cancel());
  for (let i = 0; i < objects; i++) {
    const put = await rawPut(`${server.url}/zipbench/big/o${i}.bin`, size);
    if (put.status !== 200) throw new Error(`PUT answered ${put.status}`);
  }
  const afterPut = await peakRss(server.pid);
  const plain = await timed(async () => {
    let total = 0;
    for (let i = 0; i < objects; i++) {
      total += await drain((await fetch(`${server.url}/zipbench/big/o${i}.bin`)).body);
    }
    return total;
  });
  const afterGet = await peakRss(server.pid);
  const connect = await fetch(`${server.url}/_/api/admin/session/open-browser-connect`, {
    method: "POST",
  });
  const cookie = connect.headers.get("set-cookie")!.split(";")[0];
  await connect.body?.cancel();
  const zipped = await timed(async () => {
    const res = await fetch(`${server.url}/_/api/admin/objects/zip?bucket=zipbench&prefix=big/`, {
      headers: { cookie },
    });
    if (res.status !== 200) throw new Error(`ZIP answered ${res.status}: ${await res.text()}`);
    return await drain(res.body);
  });
  const afterZip = await peakRss(server.pid);
  const mb = (bytes: number) => fmt(bytes / MiB);
  console.log(`${objects} × ${mb(size)} MiB`);
  console.log(
    `plain GETs: ${mb(plain.value)} MiB in ${fmt(plain.seconds, 2)} s ` +
      `(${fmt(plain.value / MiB / plain.seconds)} MiB/s); peak RSS after PUTs ${
        mb(afterPut)
      } MiB, ` +
      `after GETs ${mb(afterGet)} MiB`,
  );
  console.log(
    `ZIP: ${mb(zipped.value)} MiB in ${fmt(zipped.seconds, 2)} s ` +
      `(${fmt(zipped.value / MiB / zipped.seconds)} MiB/s, ` +
      `${fmt(plain.seconds / zipped.seconds, 2)}× the plain rate); peak RSS after ZIP ` +
      `${mb(afterZip)} MiB`,
  );
} finally {
  await server.stop();
  await Deno.remove(dir, { recursive: true });
}
