/**
 * Issue 30: the admin console through the fleet's load balancer (three svc instances over one S3
 * store behind HAProxy round robin, tests/helpers/fleet.ts) in Debian's chromium. Every request
 * of the page may land on another instance, so this holds only with fleet-wide admin sessions:
 * log in once, walk several pages and reload them, create a user, and find the session valid on
 * every instance; after logging out it is valid on none within a few config sync polls. Skips
 * without haproxy or chromium.
 */
import assert from "node:assert/strict";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { Page } from "playwright-core";
import { ADMIN_PASSWORD } from "./helpers/admin.ts";
import { browserReason, launchBrowser, screenshot, watchPage } from "./helpers/browser.ts";
import { type Fleet, fleetReason, startFleet } from "./helpers/fleet.ts";

const BUCKET = "console";
const ENDED = "text=Your session has ended";

/** Whether `cookie` is a valid admin session on each instance, asked directly. */
async function sessionValid(fleet: Fleet, cookie: string): Promise<boolean[]> {
  return await Promise.all(fleet.instances.map(async (instance) => {
    const response = await fetch(`${instance.url}/_/api/admin/session`, { headers: { cookie } });
    const body = await response.json() as { valid: boolean };
    return body.valid;
  }));
}

/** The page shows the console (not the login form, no ended-session message). */
async function assertLoggedIn(page: Page, where: string) {
  await page.waitForSelector("nav.side", { timeout: 20_000 });
  // Late 401s of the page's own calls show up as the ended-session message: give them a moment.
  await page.waitForTimeout(500);
  assert.equal(await page.locator(ENDED).count(), 0, `${where}: the session ended`);
  assert.equal(await page.locator("input[name=password]").count(), 0, `${where}: login form`);
}

Deno.test({
  name: "fleet: the admin console works through the load balancer in chromium",
  ignore: fleetReason !== null || browserReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(context_) {
    // Each step builds on the last: stop at the first failure instead of piling up timeouts.
    const t = {
      step: async (name: string, fn: () => Promise<void>) => {
        if (!await context_.step(name, fn)) throw new Error(`Step failed: ${name}`);
      },
    };
    await using fleet = await startFleet({ buckets: [BUCKET] });
    const s3 = fleet.client();
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "hello.txt", Body: "hello" }));
    const browser = await launchBrowser();
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page);
    const sessionCookie = async () => {
      const cookies = await context.cookies();
      return cookies.map((c) => `${c.name}=${c.value}`).join("; ");
    };
    try {
      await t.step("log in with the bootstrap password", async () => {
        try {
          await page.goto(`${fleet.url}/_/`);
          await page.fill("input[name=password]", ADMIN_PASSWORD);
          await page.click("form button[type=submit]");
          await page.waitForSelector("nav.side >> text=Dashboard");
        } catch (err) {
          await screenshot(page, "fleet-login");
          const text = (await page.locator("body").innerText()).replace(/\s+/g, " ");
          throw new Error(
            `No console after logging in; the page says: ${text}\n${problems.join("\n")}`,
            { cause: err },
          );
        }
        await assertLoggedIn(page, "dashboard");
      });

      await t.step("the session is valid on every instance", async () => {
        assert.deepEqual(
          await sessionValid(fleet, await sessionCookie()),
          fleet.instances.map(() => true),
        );
      });

      await t.step("walk the pages from the menu", async () => {
        await page.click("nav.side >> text=Objects");
        await page.waitForSelector(`.buckets a >> text=${BUCKET}`);
        await page.click(`.buckets a >> text=${BUCKET}`);
        await page.waitForSelector('tr[data-key="hello.txt"]');
        await assertLoggedIn(page, "browse");
        for (const title of ["Backends", "Buckets & policies", "Audit", "Jobs", "Dashboard"]) {
          await page.click(`nav.side >> text=${title}`);
          await page.waitForSelector("main#main");
          await assertLoggedIn(page, title);
        }
        await screenshot(page, "fleet-dashboard");
      });

      await t.step("create a user; it shows after reloads on any instance", async () => {
        await page.click("nav.side >> text=Users & groups");
        await page.fill("input[name=user_name]", "fleet-reader");
        await page.selectOption("select[name=template]", "bucket-read-only");
        await page.fill("input[name=template_bucket]", BUCKET);
        await page.click("text=Create user");
        await page.waitForSelector(".secret-key");
        await page.click("text=I have saved it");
        // The list that follows may come from an instance that has not yet adopted the change
        // (config sync polls every second here): reload until it shows, within a few polls.
        const deadline = Date.now() + 10_000;
        let firstSeenAfter = 0;
        for (let reloads = 0;; reloads++) {
          const row = await page.waitForSelector('tr[data-user="fleet-reader"]', { timeout: 1500 })
            .catch(() => null);
          if (row) {
            firstSeenAfter = reloads;
            break;
          }
          if (Date.now() > deadline) throw new Error("The new user never showed in the list");
          await page.goto(`${fleet.url}/_/users`);
        }
        if (firstSeenAfter > 0) console.log(`the new user showed after ${firstSeenAfter} reloads`);
        // From then on every instance has it: each reload's requests go round them.
        for (let i = 0; i < 4; i++) {
          await page.goto(`${fleet.url}/_/users`);
          await page.waitForSelector('tr[data-user="fleet-reader"]', { timeout: 10_000 });
          await assertLoggedIn(page, `users reload ${i}`);
        }
      });

      await t.step("reloading pages keeps the session", async () => {
        for (const name of ["dashboard", "buckets", "audit", "jobs", "browse/" + BUCKET]) {
          await page.goto(`${fleet.url}/_/${name}`);
          await page.waitForSelector("main#main");
          await assertLoggedIn(page, name);
        }
        assert.equal(await page.locator(".fatal").count(), 0, problems.join("\n"));
      });

      await t.step("Config: Sync now pulls the synced config at once", async () => {
        await page.goto(`${fleet.url}/_/config`);
        await page.click("button >> text=Sync now");
        const notice = page.locator('p.notice[role="status"]');
        await notice.waitFor({ timeout: 10_000 });
        assert.match(
          await notice.innerText(),
          /^Config sync with bucket \S+: (adopted|unchanged|published)\.$/,
        );
        await assertLoggedIn(page, "config");
      });

      await t.step("logging out ends the session on every instance", async () => {
        const cookie = await sessionCookie();
        await page.click("header.top >> text=Log out");
        await page.waitForSelector("text=You are logged out.");
        // The instance that logged out ends it at once; the others once config sync brings the
        // revocation (it polls every second here).
        const start = Date.now();
        let valid = await sessionValid(fleet, cookie);
        assert.ok(valid.includes(false), "the instance that logged out still accepts the session");
        while (valid.includes(true) && Date.now() - start < 10_000) {
          await new Promise((r) => setTimeout(r, 200));
          valid = await sessionValid(fleet, cookie);
        }
        assert.deepEqual(valid, fleet.instances.map(() => false), "still valid after 10 s");
        console.log(`the session ended on every instance within ${Date.now() - start} ms`);
        await page.goto(`${fleet.url}/_/dashboard`);
        await page.waitForSelector("input[name=password]");
      });
    } finally {
      await browser.close();
      s3.destroy();
    }
  },
});
