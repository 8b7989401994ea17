/**
 * The embedded UI in a real browser (Debian's chromium through playwright-core) against a real
 * svc: one server and one browser for the whole walk, as an operator would use the console.
 * Screenshots of every page land in test-artifacts/ui/ (gitignored). A second walk fills two
 * buckets and checks the Usage page, the dashboard's charts and stats in readable units, and a
 * re-encrypt job's progress bar mid-run. Skips cleanly, with a printed reason, when chromium is
 * not installed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CreateBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { unzipSync } from "fflate";
import type { Page } from "playwright-core";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { browserReason, launchBrowser, screenshot, watchPage } from "./helpers/browser.ts";
import { randomBytes, startSvc } from "./helpers/svc.ts";
import { ArtifactSeries } from "./helpers/tar.ts";

const BUCKET = "ui-walk";
const OTHER = "ui-hidden";
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

async function loginWithPassword(page: Page, url: string) {
  await page.goto(`${url}/_/`);
  await page.fill("input[name=password]", ADMIN_PASSWORD);
  await page.click("form button[type=submit]");
  await page.waitForSelector("nav.side");
}

async function logout(page: Page) {
  await page.click("header.top >> text=Log out");
  await page.waitForSelector("text=You are logged out.");
}

/**
 * Polls `check` from the test side (page.waitForFunction would evaluate a string in the page,
 * which the console's CSP rightly refuses).
 */
async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function downloadBytes(page: Page, click: () => Promise<void>): Promise<Uint8Array> {
  const [download] = await Promise.all([page.waitForEvent("download"), click()]);
  const path = await download.path();
  return await Deno.readFile(path);
}

Deno.test({
  name: "ui: an operator's walk through the console in chromium",
  ignore: browserReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(context_) {
    // Each step builds on the last: stop at the first failure instead of piling up timeouts.
    const t = {
      step: async (name: string, fn: () => Promise<void>) => {
        if (!await context_.step(name, fn)) throw new Error(`Step failed: ${name}`);
      },
    };
    await using svc = await startSvc();
    const s3 = svc.client();
    const admin = new AdminClient(svc.url);
    await admin.login();
    const browser = await launchBrowser();
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page);
    try {
      await t.step("log in with the bootstrap password", async () => {
        await page.goto(`${svc.url}/_/`);
        await screenshot(page, "login");
        await page.fill("input[name=password]", "wrong-password-here");
        await page.click("form button[type=submit]");
        await page.waitForSelector("p.error >> text=Wrong password");
        await page.fill("input[name=password]", ADMIN_PASSWORD);
        await page.click("form button[type=submit]");
        await page.waitForSelector("nav.side >> text=Dashboard");
        assert.equal(new URL(page.url()).pathname, "/_/dashboard");
      });

      await t.step("create a bucket from the bucket list", async () => {
        await s3.send(new CreateBucketCommand({ Bucket: OTHER }));
        await page.click("nav.side >> text=Objects");
        await page.fill("input[name=bucket]", BUCKET);
        await page.click("text=Create bucket");
        await page.waitForSelector(`.buckets a >> text=${BUCKET}`);
        await screenshot(page, "browse-buckets");
        await page.click(`.buckets a >> text=${BUCKET}`);
        await page.waitForSelector("text=This folder is empty");
        assert.equal(new URL(page.url()).pathname, `/_/browse/${BUCKET}`);
      });

      const big = crypto.getRandomValues(new Uint8Array(65536));
      const bigFile = new Uint8Array(20 * 1024 * 1024);
      for (let i = 0; i < bigFile.length; i += big.length) bigFile.set(big, i);
      const text = "hello from the browser test\nsecond line\n";

      await t.step("upload a 20 MB file (multipart) and a text file", async () => {
        // Files on disk: chromium reads them itself (a 20 MB buffer over the protocol is slow).
        const dir = await Deno.makeTempDir({ prefix: "svc-ui-upload-" });
        await Deno.writeFile(`${dir}/big.bin`, bigFile);
        await Deno.writeTextFile(`${dir}/hello.txt`, text);
        await page.setInputFiles("input[name=upload]", [`${dir}/big.bin`, `${dir}/hello.txt`]);
        await page.waitForSelector('li[data-upload="big.bin"][data-state="done"]', {
          timeout: 60_000,
        });
        await page.waitForSelector('li[data-upload="hello.txt"][data-state="done"]');
        await Deno.remove(dir, { recursive: true });
        const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "big.bin" }));
        assert.equal(head.ContentLength, bigFile.length);
        assert.match(head.ETag ?? "", /-3"$/, "20 MB in 8 MiB parts is a 3-part upload");
      });

      await t.step("cancel a multipart upload: no object, no upload left behind", async () => {
        // Upload throttled to 2 MB/s (chromium's network emulation), so Cancel lands mid-upload.
        const cdp = await context.newCDPSession(page);
        await cdp.send("Network.enable");
        await cdp.send("Network.emulateNetworkConditions", {
          offline: false,
          latency: 0,
          downloadThroughput: -1,
          uploadThroughput: 2 * 1024 * 1024,
        });
        const dir = await Deno.makeTempDir({ prefix: "svc-ui-cancel-" });
        await Deno.writeFile(`${dir}/cancelled.bin`, bigFile);
        await page.setInputFiles("input[name=upload]", [`${dir}/cancelled.bin`]);
        const item = page.locator('li[data-upload="cancelled.bin"]');
        await page.waitForSelector('li[data-upload="cancelled.bin"][data-state="uploading"]');
        await item.locator("button", { hasText: "Cancel" }).click();
        await page.waitForSelector('li[data-upload="cancelled.bin"][data-state="cancelled"]');
        await cdp.send("Network.emulateNetworkConditions", {
          offline: false,
          latency: 0,
          downloadThroughput: -1,
          uploadThroughput: -1,
        });
        await cdp.detach();
        await Deno.remove(dir, { recursive: true });
        await until(async () => {
          const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }));
          return (uploads.Uploads ?? []).length === 0;
        });
        await assert.rejects(
          s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "cancelled.bin" })),
          (err: Error) => err.name === "NotFound",
        );
      });

      await t.step("the listing shows each object with its storage kind", async () => {
        const row = page.locator('tr[data-key="big.bin"]');
        await row.waitFor();
        await until(async () => (await row.locator("td.kind").innerText()) !== "–");
        assert.match(await row.locator("td.kind").innerText(), /^(passthrough|delta|reference)$/);
        assert.match(await row.innerText(), /20\.0 MiB/, "sizes in binary units");
        await screenshot(page, "browse-objects");
      });

      await t.step("preview the text file and download it (same sha256)", async () => {
        await page.click('tr[data-key="hello.txt"] button.link');
        await page.waitForSelector(".text-preview");
        assert.equal(await page.locator(".text-preview").innerText(), text);
        assert.match(
          await page.locator(".storage-kind").innerText(),
          /passthrough|delta|reference/,
        );
        await screenshot(page, "browse-details");
        const got = await downloadBytes(page, () => page.click(".details >> text=Download"));
        assert.equal(sha256(got), sha256(new TextEncoder().encode(text)));
        await page.click(".details >> text=Close");
        await page.click('tr[data-key="big.bin"] button.link');
        await page.waitForSelector(".details >> text=No preview for this type.");
        const bigGot = await downloadBytes(page, () => page.click(".details >> text=Download"));
        assert.equal(sha256(bigGot), sha256(bigFile));
        await page.click(".details >> text=Close");
      });

      await t.step("bulk-move three objects into a folder", async () => {
        for (const name of ["a.txt", "b.txt", "c.txt"]) {
          await s3.send(
            new PutObjectCommand({ Bucket: BUCKET, Key: name, Body: `body of ${name}` }),
          );
        }
        await page.click("text=Refresh");
        for (const name of ["a.txt", "b.txt", "c.txt"]) {
          await page.check(`tr[data-key="${name}"] input[type=checkbox]`);
        }
        await page.click(".bulk >> text=Move…");
        await page.fill("input[name=destination_prefix]", "moved/");
        await page.click(".bulk >> button[type=submit]");
        await page.waitForSelector("text=Moved 3 objects.");
        await page.waitForSelector("tr.folder >> text=moved/");
        assert.equal(await page.locator('tr[data-key="a.txt"]').count(), 0);
        const listing = await admin.json<{ objects: { key: string }[] }>(
          "GET",
          `/objects/list?bucket=${BUCKET}&prefix=moved/`,
        );
        assert.deepEqual(listing.objects.map((o) => o.key), [
          "moved/a.txt",
          "moved/b.txt",
          "moved/c.txt",
        ]);
      });

      await t.step("download a selection as a ZIP and check its entries", async () => {
        await page.click("tr.folder >> text=moved/");
        await page.waitForSelector('tr[data-key="moved/a.txt"]');
        await page.waitForSelector(`.crumbs >> text=moved`);
        await page.check('input[aria-label="Select all on this page"]');
        const zip = await downloadBytes(page, () => page.click(".bulk >> text=Download ZIP"));
        const entries = unzipSync(zip);
        // Entries are named below the folder the selection came from.
        assert.deepEqual(Object.keys(entries).sort(), ["a.txt", "b.txt", "c.txt"]);
        assert.equal(new TextDecoder().decode(entries["b.txt"]), "body of b.txt");
        await page.click(`.crumbs >> text=${BUCKET}`);
        await page.waitForSelector('tr[data-key="big.bin"]');
      });

      let reader = { key: "", secret: "" };
      await t.step("create an IAM user with a read-only template", async () => {
        await page.click("nav.side >> text=Users & groups");
        await page.fill("input[name=user_name]", "reader");
        await page.selectOption("select[name=template]", "bucket-read-only");
        await page.fill("input[name=template_bucket]", BUCKET);
        await page.click("text=Create user");
        await page.waitForSelector(".secret-key");
        reader = {
          key: await page.locator(".access-key").innerText(),
          secret: await page.locator(".secret-key").innerText(),
        };
        assert.ok(reader.secret.length >= 20, "the secret is shown once");
        await screenshot(page, "users");
        await page.click("text=I have saved it");
        await page.waitForSelector('tr[data-user="reader"]');
        assert.equal(await page.locator(".secret-key").count(), 0);
      });

      await t.step(
        "a mapping rule that accepts unverified emails, from External login",
        async () => {
          await admin.json("POST", "/groups", {
            name: "contractors",
            permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
          }, 201);
          await page.click("nav.side >> text=External login");
          const form = page.locator("form:has-text('Add rule')");
          await form.locator("label:has-text('Value') input").fill("contractors.example");
          await form.locator("label:has-text('Group') input").fill("contractors");
          const verified = form.locator("label:has-text('verified email') input");
          assert.equal(await verified.isChecked(), true, "verified emails are required by default");
          await verified.uncheck();
          await form.locator("text=Add rule").click();
          await page.waitForSelector("text=Mapping rule added.");
          const { mappings } = await admin.json<{ mappings: Record<string, unknown>[] }>(
            "GET",
            "/ext-auth/mappings",
          );
          const rule = mappings.find((m) => m.match_value === "contractors.example");
          assert.equal(rule?.require_verified_email, false);
        },
      );

      await t.step("the read-only user sees only the bucket it may read", async () => {
        await logout(page);
        await page.click("text=Access key");
        await page.fill("input[name=access_key_id]", reader.key);
        await page.fill("input[name=secret_access_key]", reader.secret);
        await page.click("form button[type=submit]");
        await page.waitForSelector(`.buckets a >> text=${BUCKET}`);
        assert.equal(await page.locator(`.buckets a >> text=${OTHER}`).count(), 0);
        assert.equal(await page.locator("nav.side >> text=Users & groups").count(), 0);
        await screenshot(page, "browse-read-only");
        // Writing is refused in words, not with a blank page.
        await page.fill("input[name=bucket]", "reader-made");
        await page.click("text=Create bucket");
        await page.waitForSelector("p.error");
        await logout(page);
        await loginWithPassword(page, svc.url);
      });

      await t.step("edit the config YAML: validate, diff, apply", async () => {
        await page.click("nav.side >> text=Config");
        const area = page.locator("textarea[name=config_yaml]");
        await until(async () => (await area.inputValue()).includes("advanced:"));
        const yaml = await area.inputValue();
        await area.fill(yaml.replace("advanced:\n", "advanced:\n  debug_headers: true\n"));
        await page.click("text=Validate");
        await page.waitForSelector("text=The document is valid.");
        await page.click("button >> text=Diff");
        await page.waitForSelector(".diff .add >> text=debug_headers: true");
        await page.click("button.primary >> text=Apply");
        await page.waitForSelector("text=Config applied.");
        // debug_headers takes effect at the next start: the page lists it under requires_restart.
        assert.match(
          await page.locator(".outcome .requires-restart").innerText(),
          /advanced\.debug_headers/,
        );
        await screenshot(page, "config");
        const persisted = await Deno.readTextFile(`${svc.dataDir}/svc.yaml`);
        assert.match(persisted, /debug_headers: true/);
      });

      await t.step("a log line arrives in the live tail", async () => {
        await page.click("nav.side >> text=Logs");
        await page.waitForSelector('.status[data-status="live"]');
        const marker = `ui-tail-${crypto.randomUUID()}`;
        // A failed admin password change logs a warning naming nothing secret; a config apply
        // logs "config applied": use the latter with a marker-free document, then look for it.
        const yaml = await (await admin.request("GET", "/config/export")).text();
        await admin.json("POST", "/config/apply", {
          yaml: yaml.replace("advanced:\n", `advanced:\n  # ${marker}\n`),
        });
        await page.waitForSelector(".log li >> text=config applied");
        await screenshot(page, "logs");
      });

      await t.step("an ended session returns to the login page with a message", async () => {
        await page.evaluate(`fetch("/_/api/admin/logout", { method: "POST" })`);
        await page.click("nav.side >> text=Audit");
        await page.waitForSelector("text=Your session has ended");
        await loginWithPassword(page, svc.url);
      });

      await t.step("every page renders (screenshots, phone width, dark theme)", async () => {
        for (
          const name of [
            "dashboard",
            "usage",
            "backends",
            "buckets",
            "admission",
            "audit",
            "backup",
            "jobs",
            "events",
          ]
        ) {
          await page.goto(`${svc.url}/_/${name}`);
          await page.waitForSelector("main#main");
          await page.waitForTimeout(300);
          assert.equal(await page.locator(".fatal").count(), 0, name);
          await screenshot(page, name);
        }
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(`${svc.url}/_/browse/${BUCKET}`);
        await page.waitForSelector('tr[data-key="big.bin"]');
        await screenshot(page, "phone-browse");
        await page.click("text=Theme: auto");
        await page.click("text=Theme: light");
        await page.waitForSelector("text=Theme: dark");
        assert.equal(await page.evaluate("document.documentElement.dataset.theme"), "dark");
        await screenshot(page, "phone-browse-dark");
      });

      const csp = problems.filter((p) => /Content Security Policy/i.test(p));
      assert.deepEqual(csp, [], "nothing the page does breaks its CSP");
      const pageErrors = problems.filter((p) => p.startsWith("pageerror"));
      assert.deepEqual(pageErrors, []);
    } finally {
      await browser.close();
      s3.destroy();
    }
  },
});

/** The formatter of ui/src/format.ts, as the page must show it. */
function binary(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 100 ? 1 : 0)} ${units[unit]}`;
}

Deno.test({
  name: "ui: the Usage page, the dashboard's charts and a job's progress bar in chromium",
  ignore: browserReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(context_) {
    const t = {
      step: async (name: string, fn: () => Promise<void>) => {
        if (!await context_.step(name, fn)) throw new Error(`Step failed: ${name}`);
      },
    };
    // Paced: a 60-object re-encrypt takes ~10 s, long enough to watch its bar move.
    await using svc = await startSvc({
      env: {
        SVC_MAINTENANCE_PACE_MS: "150",
        SVC_MAINTENANCE_BATCH_SIZE: "10",
        SVC_CODEC_SLOT_WAIT_SECS: "250",
      },
    });
    const s3 = svc.client();
    const admin = new AdminClient(svc.url);
    await admin.login();
    // Three versions of an archive (stored as deltas) and 60 small objects.
    await s3.send(new CreateBucketCommand({ Bucket: "art" }));
    const series = new ArtifactSeries();
    for (const [i, body] of [series.current(), series.next(), series.next()].entries()) {
      await s3.send(new PutObjectCommand({ Bucket: "art", Key: `rel/app-${i}.tar`, Body: body }));
    }
    await s3.send(new CreateBucketCommand({ Bucket: "plain" }));
    for (let i = 0; i < 60; i++) {
      const Key = `obj-${String(i).padStart(2, "0")}.bin`;
      await s3.send(new PutObjectCommand({ Bucket: "plain", Key, Body: randomBytes(4096) }));
    }
    const browser = await launchBrowser();
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page);
    try {
      await loginWithPassword(page, svc.url);

      await t.step("the Usage page: per bucket, a chart, per deltaspace", async () => {
        const usage = await admin.json<{ buckets: Record<string, Record<string, number>> }>(
          "GET",
          "/usage",
        );
        await page.click("nav.side >> text=Usage");
        const art = page.locator('tr[data-bucket="art"]');
        await art.waitFor();
        const cells = await art.locator("td").allInnerTexts();
        const expected = usage.buckets.art;
        assert.equal(cells[1], String(expected.object_count));
        assert.equal(cells[2], binary(expected.logical_bytes), "logical bytes, readable");
        assert.equal(cells[3], binary(expected.stored_bytes), "stored bytes, readable");
        assert.ok(expected.stored_bytes < expected.logical_bytes, "the deltas save space");
        assert.match(cells[5], /^\d+(\.\d)? %$/);
        const plain = await page.locator('tr[data-bucket="plain"] td').allInnerTexts();
        assert.equal(plain[1], "60");
        assert.equal(plain[2], "240 KiB");
        // The chart: uPlot's canvas, and its figures in words below it.
        const chart = page.locator(".usage figure.chart");
        assert.equal(await chart.locator("canvas").count(), 1);
        assert.match(await chart.locator(".latest").innerText(), /logical .*iB · stored .*iB/);
        // Its byte axis in round binary steps: 0 B, 1.0 MiB, 2.0 MiB, 3.0 MiB.
        const ticks = (await chart.locator("[data-y-ticks]").getAttribute("data-y-ticks"))!;
        assert.match(ticks, /^0 B\|1\.0 MiB\|2\.0 MiB/, `byte ticks: ${ticks}`);
        // Per deltaspace: the archive versions share one.
        const space = page.locator("table.usage-deltaspaces tbody tr").first();
        await space.waitFor();
        assert.match(await space.innerText(), /^art\s/);
        assert.match(
          await page.locator('[data-tile="saved"]').innerText(),
          /Saved\s+[\d.]+ [KM]iB/,
        );
        await screenshot(page, "usage");
      });

      await t.step(
        "dashboard: real timestamps, bytes in binary units, labelled stats",
        async () => {
          await page.click("nav.side >> text=Dashboard");
          const latest = page.locator("figure.chart .latest").first();
          // Two samples a second apart: the charts draw and say when their newest sample is.
          await until(async () => !/No sample/.test(await latest.innerText()));
          const year = String(new Date().getFullYear());
          for (const text of await page.locator("figure.chart .latest").allInnerTexts()) {
            assert.ok(text.includes(year), `a sample of this year, not a far-off one: ${text}`);
          }
          // What the axes draw (kept on the chart's box; the canvas has pixels only): times of
          // today from the first sample on (uPlot's own range for one sample spanned ~3 years).
          const axes = await page.locator("figure.chart [data-x-ticks]").all();
          assert.equal(axes.length, 4, "every time chart drew its x axis");
          for (const ticks of axes) {
            const labels = (await ticks.getAttribute("data-x-ticks"))!.split("|");
            assert.ok(labels.length >= 2, `x ticks: ${labels}`);
            for (const label of labels) assert.match(label, /^\d{1,2}:\d{2}:\d{2}( [AP]M)?$/);
          }
          const bytesChart = page.locator("figure.chart:has-text('Bytes saved')");
          assert.match(
            await bytesChart.locator(".latest").innerText(),
            /saved [\d.]+ (B|KiB|MiB)$/,
          );
          const yTicks = (await bytesChart.locator("[data-y-ticks]").getAttribute("data-y-ticks"))!;
          assert.match(yTicks, /^0 B(\|[\d.]+ (B|KiB|MiB|GiB))+$/, `byte ticks: ${yTicks}`);
          // No archive was PUT here: none waits for its background conversion.
          assert.match(
            await page.locator('[data-tile="backlog"]').innerText(),
            /Archives to convert\s+0$/,
          );
          const stats = await page.locator("dl.stats").innerText();
          assert.match(stats, /Objects\s+63/);
          assert.match(stats, /Logical size \(what clients stored\)\s+[\d.]+ (KiB|MiB)/);
          assert.match(stats, /Stored size \(on the backends\)\s+[\d.]+ (KiB|MiB)/);
          assert.doesNotMatch(stats, /total_original_size/);
          await screenshot(page, "dashboard-charts");
        },
      );

      await t.step("a re-encrypt job's progress bar moves: percent, rate, ETA", async () => {
        const started = await admin.json<{ started: { id: string }[] }>(
          "POST",
          "/jobs/reencrypt",
          { buckets: ["plain"] },
          202,
        );
        const id = started.started[0].id;
        await page.click("nav.side >> text=Jobs");
        const cell = page.locator(`tr[data-job="${id}"] .job-progress`);
        // Mid-run (the page reloads every 2 s while a job runs): a part of the bar filled.
        await until(async () => {
          if (await cell.count() === 0) return false;
          const percent = Number(await cell.getAttribute("data-percent") || "0");
          return percent > 0 && percent < 90 && /ETA/.test(await cell.innerText());
        }, 30_000);
        const words = await cell.locator(".progress-words").innerText();
        assert.match(words, /^rewrite · [\d.]+ % · \d+ of 60 objects · /);
        assert.match(words, / of 240 KiB · [\d.]+ (B|KiB|MiB)\/s · ETA \d+ s$/);
        const value = Number(await cell.locator("progress").getAttribute("value"));
        assert.ok(value > 0 && value < 100, `the bar is part-filled: ${value}`);
        await screenshot(page, "jobs-progress");
        // Done: a full bar, the average rate, no ETA.
        const row = page.locator(`tr[data-job="${id}"]`);
        await until(
          async () => (await row.locator("td.status").innerText()) === "succeeded",
          60_000,
        );
        await until(async () => /100 %/.test(await cell.innerText()));
        assert.match(
          await cell.innerText(),
          /done · 100 % · 60 of 60 objects · 240 KiB of 240 KiB/,
        );
        assert.doesNotMatch(await cell.innerText(), /ETA/);
        // The ended job offers no cancel; its run's counters read in words.
        assert.equal(await row.locator("button", { hasText: "cancel" }).count(), 0);
        await row.locator("button", { hasText: "Runs" }).click();
        await page.waitForSelector("text=objects_total 60");
        assert.match(
          await page.locator(`section:has-text("Job ${id}")`).innerText(),
          /bytes_done 240 KiB/,
        );
        await screenshot(page, "jobs-progress-done");
      });

      const pageErrors = problems.filter((p) =>
        p.startsWith("pageerror") || /CSP|Content Security/.test(p)
      );
      assert.deepEqual(pageErrors, []);
    } finally {
      await browser.close();
      s3.destroy();
    }
  },
});
