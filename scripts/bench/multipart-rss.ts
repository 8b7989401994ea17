/**
 * Peak RSS (VmHWM) of svc during a large multipart upload and download: parts uploaded two at
 * a time, CompleteMultipartUpload, a full streamed GET, then a ranged GET of the last GiB.
 * The goal is a server peak of at most 200 MB. Prints a Markdown table for docs/BENCHMARKS.md.
 *
 *   node_modules/.bin/deno run -A scripts/bench/multipart-rss.ts [--size-gib 5] [--part-mib 64]
 *
 * Needs about twice the object size free in the temp dir (parts plus the assembled object).
 */
import { drain, fmt, GiB, MiB, peakRss, rawPut, startProcess, timed } from "./lib.ts";

const args = Deno.args;
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const sizeGib = arg("--size-gib", 5);
const partBytes = arg("--part-mib", 64) * MiB;
const totalBytes = sizeGib * GiB;
const partCount = Math.ceil(totalBytes / partBytes);
const IN_FLIGHT = 2;
const GOAL_MB = 200;
const ROOT = new URL("../../", import.meta.url).pathname;

if (!(partBytes > 0) || !(totalBytes > 0) || partCount > 10_000) {
  console.error("--size-gib and --part-mib must be positive, with at most 10000 parts");
  Deno.exit(2);
}

/** Free bytes in the file system holding `path`, from `df`. */
async function freeBytes(path: string): Promise<number> {
  const out = await new Deno.Command("df", { args: ["-k", "-P", path], stdout: "piped" }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  return Number(lines[lines.length - 1].split(/\s+/)[3]) * 1024;
}

const svcDir = await Deno.makeTempDir({ prefix: "bench-multipart-" });
const needed = totalBytes * 2 + 2 * GiB;
const free = await freeBytes(svcDir);
if (free < needed) {
  await Deno.remove(svcDir, { recursive: true });
  console.error(
    `need ${fmt(needed / GiB)} GiB free in ${svcDir}, have ${fmt(free / GiB)} GiB; aborting`,
  );
  Deno.exit(1);
}

const svc = await startProcess([`${ROOT}main.ts`, "--listen", "127.0.0.1:0"], {
  SVC_DATA_DIR: svcDir,
  SVC_AUTHENTICATION: "none",
  SVC_MAX_OBJECT_SIZE: String(Math.max(6 * GiB, totalBytes + GiB)),
  SVC_LOG_LEVEL: "info",
}, svcDir);

interface Row {
  phase: string;
  bytes: number;
  seconds: number;
  rss: number;
}

try {
  const base = `${svc.url}/bench`;
  const bucket = await fetch(base, { method: "PUT" });
  await bucket.body?.cancel();
  if (!bucket.ok) throw new Error(`CreateBucket ${bucket.status}`);
  const rows: Row[] = [{ phase: "idle", bytes: 0, seconds: 0, rss: await peakRss(svc.pid) }];

  const created = await fetch(`${base}/big?uploads`, { method: "POST" });
  const createdXml = await created.text();
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(createdXml)?.[1];
  if (created.status !== 200 || !uploadId) {
    throw new Error(`CreateMultipartUpload ${created.status}: ${createdXml}`);
  }

  // Parts, IN_FLIGHT at a time; the last part takes whatever is left over.
  const etags: string[] = new Array(partCount);
  let nextPart = 1;
  const parts = await timed(() =>
    Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (nextPart <= partCount) {
        const n = nextPart++;
        const size = Math.min(partBytes, totalBytes - (n - 1) * partBytes);
        const url = `${base}/big?partNumber=${n}&uploadId=${encodeURIComponent(uploadId)}`;
        const { status, response } = await rawPut(url, size);
        const etag = /^etag:\s*"?([^"\r\n]+)"?\s*$/im.exec(response)?.[1];
        if (status !== 200 || !etag) throw new Error(`UploadPart ${n} ${status}: ${response}`);
        etags[n - 1] = etag;
        if (n % 10 === 0 || n === partCount) {
          console.error(
            `part ${n}/${partCount}, peak RSS ${fmt((await peakRss(svc.pid)) / 1e6, 0)} MB`,
          );
        }
      }
    }))
  );
  rows.push({
    phase: `upload ${partCount} parts × ${partBytes / MiB} MiB, ${IN_FLIGHT} in flight`,
    bytes: totalBytes,
    seconds: parts.seconds,
    rss: await peakRss(svc.pid),
  });

  const completeXml = "<CompleteMultipartUpload>" +
    etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>"${etag}"</ETag></Part>`)
      .join("") +
    "</CompleteMultipartUpload>";
  const complete = await timed(async () => {
    const res = await fetch(`${base}/big?uploadId=${encodeURIComponent(uploadId)}`, {
      method: "POST",
      body: completeXml,
    });
    const xml = await res.text();
    const etag = /<ETag>([^<]+)<\/ETag>/.exec(xml)?.[1]?.replaceAll("&quot;", '"');
    if (res.status !== 200 || !etag?.replaceAll('"', "").endsWith(`-${partCount}`)) {
      throw new Error(`CompleteMultipartUpload ${res.status}: ${xml}`);
    }
  });
  rows.push({
    phase: "CompleteMultipartUpload",
    bytes: totalBytes,
    seconds: complete.seconds,
    rss: await peakRss(svc.pid),
  });

  const get = await timed(async () => {
    const res = await fetch(`${base}/big`);
    const n = await drain(res.body);
    if (res.status !== 200 || n !== totalBytes) throw new Error(`GET ${res.status}, ${n} bytes`);
  });
  rows.push({
    phase: "GET whole object",
    bytes: totalBytes,
    seconds: get.seconds,
    rss: await peakRss(svc.pid),
  });

  const rangeBytes = Math.min(GiB, totalBytes);
  const ranged = await timed(async () => {
    const res = await fetch(`${base}/big`, {
      headers: { range: `bytes=${totalBytes - rangeBytes}-${totalBytes - 1}` },
    });
    const n = await drain(res.body);
    if (res.status !== 206 || n !== rangeBytes) {
      throw new Error(`ranged GET ${res.status}, ${n} bytes`);
    }
  });
  rows.push({
    phase: `GET range, last ${rangeBytes / MiB} MiB`,
    bytes: rangeBytes,
    seconds: ranged.seconds,
    rss: await peakRss(svc.pid),
  });

  console.log(
    `| ${sizeGib} GiB multipart, phase | time (s) | MiB/s | server peak RSS so far (MB) |`,
  );
  console.log(`|---|---|---|---|`);
  for (const r of rows) {
    const rate = r.seconds > 0 ? fmt(r.bytes / MiB / r.seconds) : "";
    const time = r.seconds > 0 ? fmt(r.seconds, 2) : "";
    console.log(`| ${r.phase} | ${time} | ${rate} | ${fmt(r.rss / 1e6, 0)} |`);
  }
  const peak = Math.max(...rows.map((r) => r.rss));
  console.error(
    `peak RSS ${fmt(peak / 1e6, 0)} MB: ${
      peak <= GOAL_MB * 1e6 ? "within" : "OVER"
    } the ${GOAL_MB} MB goal`,
  );
} finally {
  await svc.stop();
  await Deno.remove(svcDir, { recursive: true });
}
