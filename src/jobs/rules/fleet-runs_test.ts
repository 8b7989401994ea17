import assert from "node:assert/strict";
import { BackendError, type S3Client } from "../../storage/mod.ts";
import type { RunRecord } from "../job-model.ts";
import { FLEET_RUNS_KEPT, FleetRuns, mergeRuns, runsPrefix } from "./fleet-runs.ts";

/** An S3 client over a map: PUT, GET, DELETE and a ListObjectsV2 by prefix. */
function memoryClient() {
  const objects = new Map<string, string>();
  const client = {
    send(request: { method: string; key?: string; body?: string; query?: Record<string, string> }) {
      if (request.method === "PUT") {
        objects.set(request.key!, request.body!);
      } else if (request.method === "DELETE") {
        objects.delete(request.key!);
      } else if (request.key === undefined) {
        const keys = [...objects.keys()].filter((key) => key.startsWith(request.query!.prefix));
        return Promise.resolve({
          text: `<ListBucketResult>${
            keys.map((key) => `<Contents><Key>${key.replace(/&/g, "&amp;")}</Key></Contents>`)
              .join("")
          }<IsTruncated>false</IsTruncated></ListBucketResult>`,
        });
      } else {
        const text = objects.get(request.key);
        if (text === undefined) {
          return Promise.reject(new BackendError(404, "NoSuchKey", "", "GET", false));
        }
        return Promise.resolve({ text, headers: new Headers({ etag: `"${text.length}"` }) });
      }
      return Promise.resolve({ text: "" });
    },
  };
  return { client: client as unknown as S3Client, objects };
}

function run(id: number, startedAt: number, status = "succeeded"): RunRecord {
  return {
    id,
    jobId: "replication:mirror",
    triggeredBy: "schedule",
    status: status as RunRecord["status"],
    counters: { copied: id },
    error: null,
    startedAt,
    finishedAt: status === "running" ? null : startedAt + 5,
  };
}

Deno.test("fleet runs: each instance publishes its own; a reader merges the others' with its rows", async () => {
  const { client, objects } = memoryClient();
  const a = new FleetRuns(client, "coord", "host-a&1");
  const b = new FleetRuns(client, "coord", "host-b");
  await a.publish("replication:mirror", [run(2, 300), run(1, 100)]);
  await b.publish("replication:mirror", [run(1, 200)]);
  await b.publish("lifecycle:mirror", [run(7, 900)]);
  assert.ok([...objects.keys()].every((key) => key.startsWith("_svc/runs/")));
  // B reads A's document only (its own rows come from its database).
  const others = await b.others("replication:mirror");
  assert.deepEqual(others.map((o) => o.instance), ["host-a&1"]);
  const merged = mergeRuns([{ instance: "host-b", runs: [run(1, 200)] }, ...others], 10);
  assert.deepEqual(
    merged.map(({ instance, run }) => `${instance}/${run.id}@${run.startedAt}`),
    ["host-a&1/2@300", "host-b/1@200", "host-a&1/1@100"],
  );
  // Forgetting drops only the caller's document.
  await a.forget("replication:mirror");
  assert.deepEqual(await b.others("replication:mirror"), []);
  assert.equal((await a.others("replication:mirror")).length, 1);
});

Deno.test("fleet runs: merge dedupes per instance, orders a running run first, keeps the limit", () => {
  const merged = mergeRuns([
    { instance: "a", runs: [run(3, 500, "running"), run(2, 500), run(1, 100)] },
    { instance: "a", runs: [run(1, 100)] }, // stale copy of its own
    { instance: "b", runs: [run(1, 100)] }, // same id, other instance: another run
  ], 3);
  assert.deepEqual(merged.map(({ instance, run }) => `${instance}/${run.id}`), [
    "a/3",
    "a/2",
    "a/1",
  ]);
  assert.equal(
    mergeRuns([{ instance: "a", runs: [run(1, 1)] }, { instance: "b", runs: [run(1, 1)] }], 5)
      .length,
    2,
  );
});

Deno.test("fleet runs: a damaged or foreign document is left out; at most FLEET_RUNS_KEPT published", async () => {
  const { client, objects } = memoryClient();
  const a = new FleetRuns(client, "coord", "a");
  objects.set(`${runsPrefix("replication:mirror")}junk.json`, "{not json");
  objects.set(`${runsPrefix("replication:mirror")}odd.json`, JSON.stringify({ instance: "odd" }));
  const b = new FleetRuns(client, "coord", "b");
  await b.publish(
    "replication:mirror",
    Array.from({ length: 30 }, (_, i) => run(30 - i, 1000 - i)),
  );
  const others = await a.others("replication:mirror");
  assert.equal(others.length, 1);
  assert.equal(others[0].runs.length, FLEET_RUNS_KEPT);
});
