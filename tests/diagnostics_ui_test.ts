/**
 * The Diagnostics page in a real browser (Debian's chromium through playwright-core) against a
 * real svc: the savings table and chart, the passthrough reasons, and an integrity scan started
 * from the page whose live progress (SSE) ends with the finding of a corrupted object. Skips
 * cleanly when chromium is not installed.
 */
import assert from "node:assert/strict";
import { ADMIN_PASSWORD } from "./helpers/admin.ts";
import { browserReason, launchBrowser, screenshot, watchPage } from "./helpers/browser.ts";
import { corruptFile } from "./helpers/delta.ts";
import { fillBucket } from "./helpers/diagnostics.ts";
import { objectsOnLocalDisk, signedFetch, startSvc } from "./helpers/svc.ts";

const BUCKET = "diag-ui";

Deno.test({
  name: "diagnostics ui: savings, chart and a live integrity scan in chromium",
  ignore: browserReason !== null || !objectsOnLocalDisk,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using svc = await startSvc({ env: { SVC_CODEC_SLOT_WAIT_SECS: "250" } });
    const s3 = svc.client();
    assert.equal((await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    await fillBucket(s3, BUCKET);
    await corruptFile(`${svc.dataDir}/${BUCKET}/docs/readme.txt`);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      const problems = watchPage(page);
      await page.goto(`${svc.url}/_/`);
      await page.fill("input[name=password]", ADMIN_PASSWORD);
      await page.click("form button[type=submit]");
      await page.waitForSelector("nav.side");
      await page.click("nav.side >> text=Diagnostics");
      await page.waitForSelector(`td:text-is("${BUCKET}")`);
      // The chart is drawn (uPlot's canvas) and the table names the passthrough reasons.
      assert.equal(await page.locator(".diagnostics .chart canvas").count(), 1);
      const row = page.locator("tr", { has: page.locator(`td:text-is("${BUCKET}")`) }).first();
      assert.match(await row.innerText(), /delta: \d+/);
      assert.match(await row.innerText(), /passthrough: \d+/);
      await page.waitForSelector(".status[data-status=live]");
      await page.click("text=Start scan");
      await page.waitForSelector(".scan-state[data-state=finished]");
      const findings = await page.locator(".findings").innerText();
      assert.match(findings, /corrupt_object/);
      assert.match(findings, /docs\/readme\.txt/);
      await screenshot(page, "diagnostics");
      assert.deepEqual(problems.filter((p) => p.startsWith("pageerror")), []);
    } finally {
      await browser.close();
      s3.destroy();
    }
  },
});
