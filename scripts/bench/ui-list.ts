/**
 * UI benchmark: how long the object browser takes to show the first page of a folder holding
 * 10,000 objects, in Debian's chromium against a real svc (a benchmark, not a timed test).
 *
 *   node_modules/.bin/deno run --allow-all scripts/bench/ui-list.ts [--objects 10000] [--runs 5]
 *
 * Fills `bench/many/` with tiny objects through the S3 API, logs in through the UI, then for each
 * run navigates to `/_/browse/bench/many/` and measures, on the browser's own clock, from
 * navigation start until the first page of 200 rows is in the DOM (a performance mark the object
 * list sets). As the baseline, the same listing page fetched by the page itself from `/objects/list`
 * (no rendering) in the same run.
 */
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD } from "../../tests/helpers/admin.ts";
import { browserReason, launchBrowser } from "../../tests/helpers/browser.ts";
import { startSvc } from "../../tests/helpers/svc.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const OBJECTS = arg("objects", 10_000);
const RUNS = arg("runs", 5);

if (browserReason) {
  console.error(browserReason);
  Deno.exit(0);
}

const svc = await startSvc();
const s3 = svc.client();
await s3.send(new CreateBucketCommand({ Bucket: "bench" }));
let next = 0;
const fillStarted = performance.now();
await Promise.all(Array.from({ length: 16 }, async () => {
  while (next < OBJECTS) {
    const i = next++;
    const key = `many/object-${String(i).padStart(6, "0")}.txt`;
    await s3.send(new PutObjectCommand({ Bucket: "bench", Key: key, Body: `object ${i}` }));
  }
}));
console.log(
  `filled ${OBJECTS} objects in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`,
);

const browser = await launchBrowser();
const page = await browser.newPage();
await page.goto(`${svc.url}/_/`);
await page.fill("input[name=password]", ADMIN_PASSWORD);
await page.click("form button[type=submit]");
await page.waitForSelector("nav.side");

const fullPage: number[] = [];
const apiOnly: number[] = [];
for (let run = 0; run < RUNS; run++) {
  await page.goto(`${svc.url}/_/browse/bench/many/`);
  await page.waitForSelector("tr[data-key]:nth-child(200)");
  // The page's own mark, set once a listing page is in the DOM; its time counts from the start
  // of the navigation (HTML, bundle, session check, listing request, render).
  fullPage.push(
    await page.evaluate(
      `performance.getEntriesByName("svc:listing-rendered")[0].startTime`,
    ) as number,
  );
  if (Deno.env.get("UI_BENCH_TRACE")) {
    console.log(
      await page.evaluate(
        `JSON.stringify(performance.getEntriesByType("resource").map((e) =>
          [e.name.slice(-60), Math.round(e.startTime), Math.round(e.responseEnd)]))`,
      ),
    );
  }
  apiOnly.push(
    await page.evaluate(
      `(async () => { const t = performance.now();
        await (await fetch("/_/api/admin/objects/list?bucket=bench&prefix=many/&delimiter=/&max_keys=200")).json();
        return performance.now() - t; })()`,
    ) as number,
  );
}
const stats = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms ` +
    `(min ${sorted[0].toFixed(0)}, max ${sorted[sorted.length - 1].toFixed(0)})`;
};
console.log(`first page (200 rows) in the DOM:   ${stats(fullPage)}`);
console.log(`baseline, /objects/list page alone:  ${stats(apiOnly)}`);
await browser.close();
s3.destroy();
await svc.stop();
