/**
 * A migration's route outlives the gate that carried it (issue 30, "no stale reads across
 * instances"): instance C is stopped, a migration with source cleanup runs through instance A and
 * finishes, then C starts again from its old config file (the bucket routed to the source). It
 * reads the route record `_svc/routes/<bucket>.json` before its listener opens and adopts it: it
 * serves every object from the new backend byte-identical, and its writes land there.
 */
import assert from "node:assert/strict";
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { type Fleet, fleetReason, startFleet } from "./helpers/fleet.ts";
import { storedKeys, twoStores } from "./helpers/fleet-stores.ts";
import { until } from "./helpers/poll.ts";
import { startBackingSvc } from "./helpers/s3-front.ts";
import type { S3Server } from "./helpers/s3-servers.ts";

type Json = Record<string, unknown>;

/**
 * Three instances routing "moving" to the store "main"; C is stopped and a migration to "second"
 * with source cleanup runs through A to its end. Returns what was written and C's old config.
 */
async function migrateWhileCDown(fleet: Fleet) {
  const oldConfig = await Deno.readTextFile(fleet.configFile);
  const lb = fleet.client();
  const bodies = new Map<string, Uint8Array>();
  for (let i = 0; i < 12; i++) {
    const key = `before/${String(i).padStart(2, "0")}`;
    bodies.set(key, crypto.getRandomValues(new Uint8Array(3000 + i)));
    await lb.send(new PutObjectCommand({ Bucket: "moving", Key: key, Body: bodies.get(key) }));
  }
  lb.destroy();
  await fleet.kill(2);
  const a = new AdminClient(fleet.instances[0].url);
  await a.login();
  const started = await a.json<Json>("POST", "/buckets/moving/migrate", {
    target_backend: "second",
    delete_source: true,
  }, 202);
  const id = String(started.id);
  const finished = await a.jobEnded(id);
  assert.equal(finished.status, "succeeded", JSON.stringify(finished));
  assert.deepEqual(await storedKeys(fleet.store.endpoint, "moving"), [], "source cleaned up");
  return { bodies, oldConfig };
}

const fleetOptions = (second: S3Server) => ({
  buckets: ["moving"],
  backendsYaml: twoStores(second),
  // Routed explicitly, as operators route buckets between named backends.
  storageYaml: "  buckets:\n    moving:\n      backend: main\n",
});

async function readVia(s3: S3Client, key: string): Promise<Uint8Array> {
  const got = await s3.send(new GetObjectCommand({ Bucket: "moving", Key: key })).catch(
    (err) => assert.fail(`C could not read ${key}: ${err.name}: ${err.message}`),
  );
  return await got.Body!.transformToByteArray();
}

Deno.test({
  name: "an instance down during a migration's flip adopts the route record when it restarts",
  ignore: fleetReason !== null,
  async fn() {
    const second = await startBackingSvc(["unused"]);
    try {
      await using fleet = await startFleet(fleetOptions(second));
      const { bodies, oldConfig } = await migrateWhileCDown(fleet);
      // C's own config file still routes the bucket to the source (the file is shared here:
      // A persisted the flip into it, so the old text is put back for C alone to read).
      await Deno.writeTextFile(fleet.configFile, oldConfig);
      await fleet.restart(2);
      const c = fleet.instanceClient(2);
      for (const [key, body] of bodies) assert.deepEqual(await readVia(c, key), body, key);
      const late = crypto.getRandomValues(new Uint8Array(4096));
      await c.send(new PutObjectCommand({ Bucket: "moving", Key: "after/c", Body: late }));
      assert.ok((await storedKeys(second.endpoint, "moving")).includes("after/c"), "on second");
      assert.deepEqual(await storedKeys(fleet.store.endpoint, "moving"), [], "nothing on main");
      const lb = fleet.client();
      const back = await lb.send(new GetObjectCommand({ Bucket: "moving", Key: "after/c" }));
      assert.deepEqual(await back.Body!.transformToByteArray(), late);
      // C persisted the adopted route to its config file.
      assert.match(await Deno.readTextFile(fleet.configFile), /moving:\s+backend: second/);
      assert.match(fleet.instances[2].process!.logs.join("\n"), /adopted a migration's route/);
      for (const s3 of [lb, c]) s3.destroy();
    } finally {
      await second.stop();
    }
  },
});

Deno.test({
  name: "an instance that cannot adopt the route record refuses the bucket (503) until it can",
  ignore: fleetReason !== null,
  async fn() {
    const second = await startBackingSvc(["unused"]);
    try {
      await using fleet = await startFleet(fleetOptions(second));
      const { bodies, oldConfig } = await migrateWhileCDown(fleet);
      // C comes back without the target backend in its config at all.
      const withoutSecond = oldConfig.replace(/ {4}- name: second\n( {6}.*\n)+/, "");
      assert.notEqual(withoutSecond, oldConfig);
      await Deno.writeTextFile(fleet.configFile, withoutSecond);
      await fleet.restart(2);
      const c = fleet.instanceClient(2);
      const refused = async (work: Promise<unknown>) => {
        const err = await work.then(() => null, (e) => e);
        assert.equal(err?.$metadata?.httpStatusCode, 503, String(err));
        assert.equal(err?.name, "ServiceUnavailable");
      };
      await refused(c.send(new GetObjectCommand({ Bucket: "moving", Key: "before/00" })));
      await refused(c.send(new PutObjectCommand({ Bucket: "moving", Key: "lost", Body: "x" })));
      await refused(c.send(new ListObjectsV2Command({ Bucket: "moving" })));
      assert.deepEqual(await storedKeys(fleet.store.endpoint, "moving"), [], "nothing on main");
      assert.match(fleet.instances[2].process!.logs.join("\n"), /cannot be adopted/);
      const fenced = async () => {
        const text = await (await fetch(`${fleet.instances[2].url}/_/metrics`)).text();
        return Number(text.match(/^svc_fenced_buckets (\S+)$/m)?.[1]);
      };
      assert.equal(await fenced(), 1, "svc_fenced_buckets while refused");
      // The operator adds the backend and reloads: the record is adopted, the bucket served.
      await Deno.writeTextFile(fleet.configFile, oldConfig);
      fleet.instances[2].process!.kill("SIGHUP");
      await until("C to adopt the route", async () => {
        const got = await c.send(new GetObjectCommand({ Bucket: "moving", Key: "before/00" }))
          .catch(() => null);
        return got ? true : undefined;
      });
      for (const [key, body] of bodies) assert.deepEqual(await readVia(c, key), body, key);
      assert.equal(await fenced(), 0, "svc_fenced_buckets once adopted");
      c.destroy();
    } finally {
      await second.stop();
    }
  },
});
