import assert from "node:assert/strict";
import {
  FleetRoutes,
  routeIdentity,
  type RouteRecord,
  type RouteStore,
  type StoredRoute,
} from "./fleet-routes.ts";

/** The coordination bucket's route records in memory: ETags change per write, conditions hold. */
class MemoryRoutes implements RouteStore {
  records = new Map<string, StoredRoute>();
  writes = 0;
  #n = 0;
  list() {
    return Promise.resolve(
      [...this.records].map(([bucket, { etag }]) => ({ bucket, etag })),
    );
  }
  read(bucket: string) {
    const found = this.records.get(bucket);
    return Promise.resolve(found ? structuredClone(found) : null);
  }
  write(record: RouteRecord, etag: string | null) {
    this.writes++;
    if ((this.records.get(record.bucket)?.etag ?? null) !== etag) return Promise.resolve(false);
    this.records.set(record.bucket, { record: structuredClone(record), etag: `e${++this.#n}` });
    return Promise.resolve(true);
  }
}

interface Node {
  routes: FleetRoutes;
  config: Map<string, string>;
  backends: Set<string>;
  meta: Map<string, string>;
  fences: Map<string, string>;
  adopted: string[];
  refuse: boolean;
}

function node(store: RouteStore, instance: string, backends = ["main", "second"]): Node {
  const n: Node = {
    config: new Map([["data", "main"]]),
    backends: new Set(backends),
    meta: new Map(),
    fences: new Map(),
    adopted: [],
    refuse: false,
    routes: null as unknown as FleetRoutes,
  };
  n.routes = new FleetRoutes({
    store,
    instance,
    routedTo: (bucket) => n.config.get(bucket),
    known: (backend) => n.backends.has(backend),
    adopt: (record) => {
      if (n.refuse) return Promise.reject(new Error("Config apply refused"));
      n.config.set(record.bucket, record.backend);
      n.adopted.push(`${record.bucket}->${record.backend}`);
      return Promise.resolve();
    },
    settled: (bucket) => Promise.resolve(n.meta.get(bucket) ?? null),
    settle: (bucket, identity) => {
      n.meta.set(bucket, identity);
      return Promise.resolve();
    },
    fence: (bucket, reason) => {
      if (reason === null) n.fences.delete(bucket);
      else n.fences.set(bucket, reason);
    },
    now: () => 1_000,
  });
  return n;
}

Deno.test("an instance that missed the flip adopts the record once, at its next listing", async () => {
  const store = new MemoryRoutes();
  const [a, c] = [node(store, "a"), node(store, "c")];
  a.config.set("data", "second"); // the holder's own apply comes first
  await a.routes.record("data", "second", "maintenance:4");
  const stored = store.records.get("data")!.record;
  assert.deepEqual([stored.backend, stored.job, stored.holder], ["second", "maintenance:4", "a"]);
  assert.equal(a.meta.get("data"), routeIdentity(stored), "the holder settled its own record");
  await c.routes.sync();
  assert.deepEqual(c.adopted, ["data->second"]);
  assert.equal(c.meta.get("data"), routeIdentity(stored));
  await c.routes.sync();
  assert.deepEqual(c.adopted, ["data->second"], "adopted once");
  await a.routes.sync();
  assert.deepEqual(a.adopted, [], "the holder routes there already");
});

Deno.test("a route the operator set after the record was settled is theirs", async () => {
  const store = new MemoryRoutes();
  const c = node(store, "c");
  await node(store, "a").routes.record("data", "second", "maintenance:4");
  await c.routes.sync();
  c.config.set("data", "main"); // a local apply afterwards
  await c.routes.sync();
  assert.deepEqual(c.adopted, ["data->second"]);
  assert.equal(c.config.get("data"), "main");
  assert.equal(c.fences.size, 0);
  // A later migration writes a new record: that one is adopted again.
  await node(store, "b").routes.record("data", "second", "maintenance:9");
  await c.routes.sync();
  assert.deepEqual(c.adopted, ["data->second", "data->second"]);
});

Deno.test("an instance that cannot adopt refuses the bucket until it can", async () => {
  const store = new MemoryRoutes();
  const c = node(store, "c", ["main"]);
  await node(store, "a").routes.record("data", "second", "maintenance:4");
  await c.routes.sync();
  assert.match(c.fences.get("data") ?? "", /migrated to backend "second".*not configured/);
  assert.equal(c.config.get("data"), "main", "not adopted");
  assert.equal(c.meta.get("data"), undefined, "not settled: tried again");
  c.backends.add("second"); // the operator added the backend (a reload)
  await c.routes.sync();
  assert.deepEqual([c.adopted, c.fences.size], [["data->second"], 0]);

  const d = node(store, "d");
  d.refuse = true;
  await d.routes.sync();
  assert.match(d.fences.get("data") ?? "", /Config apply refused/);
  d.config.set("data", "second"); // routed there by hand: the record matches, nothing to refuse
  await d.routes.sync();
  assert.equal(d.fences.size, 0);
});

Deno.test("a fence goes with its record", async () => {
  const store = new MemoryRoutes();
  const c = node(store, "c", ["main"]);
  await node(store, "a").routes.record("data", "second", "maintenance:4");
  await c.routes.sync();
  assert.equal(c.fences.size, 1);
  store.records.delete("data");
  await c.routes.sync();
  assert.equal(c.fences.size, 0);
});

Deno.test("two flips never interleave: each replaces the record it read", async () => {
  const store = new MemoryRoutes();
  await node(store, "a").routes.record("data", "second", "maintenance:1");
  const before = store.records.get("data")!.etag;
  // A writer holding the old ETag fails its condition.
  const stale = { bucket: "data", backend: "main", job: "x", holder: "z", at: 5 };
  assert.equal(await store.write(stale, null), false);
  await node(store, "b").routes.record("data", "main", "maintenance:2");
  assert.equal(await store.write(stale, before), false);
  assert.equal(store.records.get("data")!.record.job, "maintenance:2");
  // A record write repeated after a lost answer finds itself and writes nothing.
  const writes = store.writes;
  await node(store, "b").routes.record("data", "main", "maintenance:2");
  assert.equal(store.writes, writes);
});
