/**
 * Issue 30 item 4: fleet jobs visible and steerable from any instance, in the console and the
 * CLI. Three svc instances over one backing svc behind HAProxy (tests/helpers/fleet.ts). With
 * re-encrypt jobs running on instance A, the Jobs page served by instance B (Debian's chromium)
 * shows A's job with its holder and heartbeat, its progress, only a Cancel button, and that
 * button cancels the job on A; a lifecycle rule run on A shows in the run history on B's page
 * with the instance column. `svc admin` against B lists the other job with its holder and
 * cancels it by its remote id (`maintenance:<n>@<instance>`, `@` URL-encoded). An instance
 * stopped cleanly deletes its presence document. Skips without haproxy or chromium.
 */
import assert from "node:assert/strict";
import { ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";
import { browserReason, launchBrowser, screenshot, watchPage } from "./helpers/browser.ts";
import { COORD_BUCKET, fleetReason, startFleet } from "./helpers/fleet.ts";
import { ACCESS_KEY, SECRET_KEY } from "./helpers/svc.ts";
import { runAdminCli } from "./helpers/admin-cli.ts";
import { until } from "./helpers/poll.ts";

type Json = Record<string, unknown>;

const LIFECYCLE = `  lifecycle:
    enabled: true
    tick_interval: 1h
    rules:
      - name: tidy
        enabled: true
        bucket: tidy
        action: delete
        expire_after: 1d
`;

/** `svc admin <args>` as a subprocess with its own session file: its stdout (exit 0 asserted). */
async function cli(args: string[], env: Record<string, string>, stdin?: string) {
  const run = await runAdminCli(args, env, stdin);
  assert.equal(run.code, 0, `svc admin ${args.join(" ")}: ${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

Deno.test({
  name: "fleet: the Jobs page and svc admin of one instance show and cancel another's jobs",
  ignore: fleetReason !== null || browserReason !== null,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using fleet = await startFleet({
      buckets: ["data", "more", "tidy"],
      storageYaml: LIFECYCLE,
      env: { SVC_MAINTENANCE_PACE_MS: "500" },
    });
    const lb = fleet.client();
    for (const bucket of ["data", "more"]) {
      for (let i = 0; i < 60; i++) {
        await lb.send(new PutObjectCommand({ Bucket: bucket, Key: `k/${i}`, Body: `${i}` }));
      }
    }
    lb.destroy();
    const [a, b] = [
      new AdminClient(fleet.instances[0].url),
      new AdminClient(fleet.instances[1].url),
    ];
    await a.login();
    await b.login();
    // A run of the rule on A, then two re-encrypts on A (its runner runs two at once).
    // (The boot run may hold the rule's lease a moment: 409 until it ends.)
    await until("a run of the rule on A", async () => {
      const response = await a.request("POST", "/jobs/lifecycle:tidy/run-now");
      const text = await response.text();
      if (response.status === 200) return true;
      if (response.status !== 409) throw new Error(`run-now: ${response.status} ${text}`);
    });
    const started = await a.json<{ started: Json[] }>("POST", "/jobs/reencrypt", {
      buckets: ["data", "more"],
    }, 202);
    const [viaPage, viaCli] = started.started.map((s) => String(s.id));
    const remote = (id: string) =>
      until(`${id} to show on B`, async () => {
        const { jobs } = await b.json<{ jobs: Json[] }>("GET", "/jobs");
        return jobs.find((row) => String(row.id).startsWith(`${id}@`));
      });
    const row = await remote(viaPage);
    const holder = String((row.held_by as Json).instance);
    const remoteId = String(row.id);
    assert.equal(remoteId, `${viaPage}@${holder}`);
    // What B's page shows of the rule: runs of every instance, A's named.
    const { runs } = await b.json<{ runs: Json[] }>("GET", "/jobs/lifecycle:tidy/runs");
    assert.ok(runs.some((run) => run.instance === holder), JSON.stringify(runs));

    const browser = await launchBrowser();
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page);
    try {
      await t.step("B's Jobs page shows A's job with its holder and only Cancel", async () => {
        await page.goto(`${fleet.instances[1].url}/_/`);
        await page.fill("input[name=password]", ADMIN_PASSWORD);
        await page.click("form button[type=submit]");
        await page.waitForSelector("nav.side >> text=Dashboard");
        await page.goto(`${fleet.instances[1].url}/_/jobs`);
        const tr = page.locator(`tr[data-job="${remoteId}"]`);
        await tr.waitFor();
        const held = tr.locator(`small.fleet[data-held-by="${holder}"]`);
        assert.match(
          await held.innerText(),
          new RegExp(`^running on ${holder}, heartbeat \\d+ s ago$`),
        );
        assert.equal(await tr.locator(".job-progress progress").count(), 1, "its progress bar");
        assert.deepEqual(await tr.locator("td.actions button").allInnerTexts(), ["cancel"]);
      });

      await t.step("the rule's run history on B names the instance of A's run", async () => {
        await page.click('tr[data-job="lifecycle:tidy"] >> button:text-is("Runs")');
        const history = page.locator('section:has(h2:text-is("Job lifecycle:tidy"))');
        await history.locator("th", { hasText: /^instance$/ }).first().waitFor();
        const headers = await history.locator("table").first().locator("th").allInnerTexts();
        assert.deepEqual(headers.slice(0, 2), ["id", "instance"], headers.join(","));
        await history.locator("td", { hasText: new RegExp(`^${holder}$`) }).first().waitFor();
        await screenshot(page, "fleet-jobs");
      });

      await t.step("its Cancel button on B cancels the job on A", async () => {
        await page.click(`tr[data-job="${remoteId}"] >> button:text-is("cancel")`);
        await page.waitForSelector(`p.notice >> text=Job ${remoteId}: cancel requested.`);
        const job = await a.jobEnded(viaPage, 30_000);
        assert.equal(job.status, "cancelled", JSON.stringify(job));
        assert.equal(problems.filter((p) => !p.includes("409")).length, 0, problems.join("\n"));
      });
    } catch (err) {
      await screenshot(page, "fleet-jobs-failed").catch(() => {});
      throw err;
    } finally {
      await browser.close();
    }

    await t.step("svc admin on B lists A's job with its holder and cancels it", async () => {
      const dir = await Deno.makeTempDir({ prefix: "svc-fleet-cli-" });
      const env = { HOME: dir, SVC_ADMIN_URL: fleet.instances[1].url };
      try {
        await cli(["login", "--password-stdin"], env, `${ADMIN_PASSWORD}\n`);
        const cliId = String((await remote(viaCli)).id);
        const list = await cli(["jobs", "list"], env);
        const line = list.split("\n").find((l) => l.startsWith(cliId));
        assert.match(String(line), new RegExp(`\\s${holder} \\(heartbeat \\d+s ago\\)\\s`), list);
        assert.match(list.split("\n")[0], /HELD BY/);
        await cli(["jobs", "cancel", cliId], env);
        const job = await a.jobEnded(viaCli, 30_000);
        assert.equal(job.status, "cancelled", JSON.stringify(job));
      } finally {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    });

    await t.step("a cleanly stopped instance removes its presence document", async () => {
      const store = new S3Client({
        endpoint: fleet.store.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
      });
      const presences = async () =>
        ((await store.send(
          new ListObjectsV2Command({ Bucket: COORD_BUCKET, Prefix: "_svc/instances/" }),
        )).Contents ?? []).map((object) => object.Key!);
      try {
        assert.equal((await presences()).length, 3, "one presence per instance");
        await fleet.instances[2].process!.stop();
        fleet.instances[2].process = null;
        const left = await presences();
        assert.equal(left.length, 2, left.join(","));
        assert.ok(left.includes(`_svc/instances/${encodeURIComponent(holder)}.json`));
      } finally {
        store.destroy();
      }
    });
  },
});
