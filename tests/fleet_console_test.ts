/**
 * Issue 30: the admin console through the fleet's load balancer (three svc instances over one S3
 * store behind HAProxy round robin, tests/helpers/fleet.ts) in Debian's chromium. Every request
 * of the page may land on another instance, so this holds only with fleet-wide admin sessions:
 * log in once, walk several pages and reload them, create a user, and find the session valid on
 * every instance; after logging out it is valid on none. Skips without haproxy or chromium.
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
        await page.waitForSelector('tr[data-user="fleet-reader"]');
        // Each reload's requests go round the instances; config sync shares the user.
        for (let i = 0; i < 4; i++) {
          await page.goto(`${fleet.url}/_/users`);
          await page.waitForSelector('tr[data-user="fleet-reader"]', { timeout: 20_000 });
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

      await t.step("logging out ends the session on every instance", async () => {
        const cookie = await sessionCookie();
        await page.click("header.top >> text=Log out");
        await page.waitForSelector("text=You are logged out.");
        assert.deepEqual(await sessionValid(fleet, cookie), fleet.instances.map(() => false));
        await page.goto(`${fleet.url}/_/dashboard`);
        await page.waitForSelector("input[name=password]");
      });
    } finally {
      await browser.close();
      s3.destroy();
    }
  },
});
