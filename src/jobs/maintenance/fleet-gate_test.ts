import assert from "node:assert/strict";
import { emptyProgress, type JobRecord } from "../job-model.ts";
import type { GateAck, GateDocument, GateStore, StoredGate } from "./fleet-gate-docs.ts";
import { FleetGate } from "./fleet-gate.ts";
import type { FleetJobHooks, MaintenanceWriteGate } from "./maintenance-deps.ts";

/** The coordination bucket in memory: ETags change on every write, conditions are honoured. */
class MemoryStore implements GateStore {
  gates = new Map<string, StoredGate>();
  acksOf = new Map<string, Map<string, GateAck>>();
  presence = new Map<string, number>();
  #n = 0;
  list(_prefix: string) {
    return Promise.resolve([...this.gates.values()].map((g) => ({
      key: `_svc/gates/${g.doc.bucket}.json`,
      etag: g.etag,
    })));
  }
  read(bucket: string) {
    const found = this.gates.get(bucket);
    return Promise.resolve(found ? structuredClone(found) : null);
  }
  create(doc: GateDocument) {
    if (this.gates.has(doc.bucket)) return Promise.resolve(null);
    const etag = `e${++this.#n}`;
    this.gates.set(doc.bucket, { doc: structuredClone(doc), etag });
    return Promise.resolve(etag);
  }
  replace(doc: GateDocument, etag: string) {
    if (this.gates.get(doc.bucket)?.etag !== etag) return Promise.resolve(null);
    const next = `e${++this.#n}`;
    this.gates.set(doc.bucket, { doc: structuredClone(doc), etag: next });
    return Promise.resolve(next);
  }
  remove(bucket: string) {
    this.gates.delete(bucket);
    this.acksOf.delete(bucket);
    return Promise.resolve();
  }
  ack(bucket: string, ack: GateAck) {
    const acks = this.acksOf.get(bucket) ?? new Map();
    acks.set(ack.instance, ack);
    this.acksOf.set(bucket, acks);
    return Promise.resolve();
  }
  acks(bucket: string, holder: string, job: string) {
    const out = new Map<string, GateAck>();
    for (const [i, a] of this.acksOf.get(bucket) ?? []) {
      if (a.holder === holder && a.job === job) out.set(i, a);
    }
    return Promise.resolve(out);
  }
  present(instance: string, at: number) {
    this.presence.set(instance, at);
    return Promise.resolve();
  }
  absent(instance: string) {
    this.presence.delete(instance);
    return Promise.resolve();
  }
  sweepPresence(before: number) {
    const gone = [...this.presence].filter(([, at]) => at < before).map(([i]) => i);
    for (const i of gone) this.presence.delete(i);
    return Promise.resolve(gone);
  }
  live(now: number, windowMs: number) {
    const live = new Set<string>();
    for (const [i, at] of this.presence) if (now - at <= windowMs) live.add(i);
    return Promise.resolve(live);
  }
}

/** A process's own gate: held buckets and writes in flight (as BucketWriteGate keeps them). */
class LocalGate implements MaintenanceWriteGate {
  held = new Map<string, string>();
  inflight = 0;
  #wake: (() => void)[] = [];
  holder(bucket: string) {
    return this.held.get(bucket);
  }
  engage(bucket: string, job: string) {
    this.held.set(bucket, job);
  }
  lift(bucket: string, job?: string) {
    if (job === undefined || this.held.get(bucket) === job) this.held.delete(bucket);
  }
  enter() {
    this.inflight++;
    return () => {
      if (--this.inflight === 0) { for (const wake of this.#wake.splice(0)) wake(); }
    };
  }
  drained() {
    return this.inflight === 0 ? Promise.resolve() : new Promise<void>((r) => this.#wake.push(r));
  }
}

function job(id: string, bucket: string, type = "reencrypt"): JobRecord {
  return {
    id,
    kind: "maintenance",
    type,
    scope: { bucket, prefix: "" },
    status: "running",
    paused: false,
    cancelRequested: false,
    progress: emptyProgress("drain"),
    state: {},
    error: null,
    createdBy: "t",
    createdAt: 0,
    startedAt: null,
    finishedAt: null,
    updatedAt: 0,
  };
}

interface Member {
  gate: FleetGate;
  local: LocalGate;
  adopted: string[];
  cancelled: string[];
  lost: string[];
}

function member(store: MemoryStore, instance: string, clock: { now: number }): Member {
  const local = new LocalGate();
  const m: Member = {
    local,
    adopted: [],
    cancelled: [],
    lost: [],
    gate: new FleetGate({
      docs: store,
      instance,
      local,
      adopt: (bucket, backend) => {
        m.adopted.push(`${bucket}->${backend}`);
        return Promise.resolve();
      },
      now: () => clock.now,
      sleep: () => new Promise((r) => setTimeout(r, 1)),
    }),
  };
  const hooks: FleetJobHooks = {
    row: (id) => Promise.resolve(m.cancelled.includes(id) ? null : { id, status: "running" }),
    cancel: (id) => {
      m.cancelled.push(id);
      return Promise.resolve();
    },
    lost: (id) => {
      m.lost.push(id);
      return Promise.resolve();
    },
  };
  m.gate.attach(hooks);
  return m;
}

/** Settles the async acks a tick starts. */
const settle = () => new Promise((r) => setTimeout(r, 10));

Deno.test("a gate holds the bucket on every instance; the job waits for each live one's drain", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const [a, b, c] = ["a", "b", "c"].map((i) => member(store, i, clock));
  for (const m of [a, b, c]) await m.gate.tick(); // presences
  const leave = b.local.enter(); // a write in flight on b before the gate
  assert.equal(await a.gate.claim(job("maintenance:1", "data")), "created");
  assert.equal(await c.gate.claim(job("maintenance:7", "data")), "held", "one job per bucket");
  assert.match(String(await c.gate.check("data")), /held by job maintenance:1 on instance "a"/);
  a.gate.engage("data", "maintenance:1");
  let drained = false;
  const waiting = a.gate.drained("data").then(() => drained = true);
  await b.gate.tick();
  await c.gate.tick();
  await settle();
  assert.equal(b.local.holder("data"), "maintenance:1@a", "b gates the bucket");
  assert.equal(c.local.holder("data"), "maintenance:1@a");
  assert.equal(drained, false, "b's write counted before the gate has not ended");
  leave();
  await settle();
  await waiting;
  assert.equal(drained, true);
  // Others see the job's row; lifting removes the gate, and the others stop gating.
  assert.deepEqual(b.gate.remoteRows().map((r) => r.id), ["maintenance:1@a"]);
  a.gate.lift("data", "maintenance:1");
  await settle();
  assert.equal(store.gates.size, 0);
  await b.gate.tick();
  assert.equal(b.local.holder("data"), undefined);
  assert.deepEqual(b.gate.remoteRows(), []);
});

Deno.test("an instance whose presence is stale is not waited for", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const a = member(store, "a", clock);
  await store.present("gone", clock.now - 60_000);
  await a.gate.tick();
  await a.gate.claim(job("maintenance:1", "data"));
  await a.gate.drained("data"); // resolves: nobody else is live
});

Deno.test("a cancel asked on another instance reaches the holder at its heartbeat", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const [a, b] = ["a", "b"].map((i) => member(store, i, clock));
  await a.gate.claim(job("maintenance:3", "data"));
  await b.gate.tick();
  const remote = b.gate.remoteJob("maintenance:3@a");
  assert.equal(remote?.scope.bucket, "data");
  assert.equal(await b.gate.requestCancel("maintenance:3@a", "ops"), null);
  assert.equal(b.gate.remoteRow("maintenance:3@a")?.status, "cancelling");
  await a.gate.heartbeat();
  assert.deepEqual(a.cancelled, ["maintenance:3"]);
  assert.equal(
    await b.gate.requestCancel("maintenance:9@a", "ops"),
    'No job "maintenance:9@a" runs in the fleet',
  );
});

Deno.test("a dead holder's gate is lifted after its expiry; the holder then finds it lost", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const [a, b] = ["a", "b"].map((i) => member(store, i, clock));
  await a.gate.claim(job("maintenance:1", "data"));
  await b.gate.tick();
  assert.equal(b.local.holder("data"), "maintenance:1@a");
  clock.now += 20_000;
  await b.gate.tick();
  assert.equal(store.gates.size, 1, "not yet expired");
  clock.now += 15_000;
  await b.gate.tick(); // lifts the lapsed gate
  assert.equal(store.gates.size, 0);
  await b.gate.tick();
  assert.equal(b.local.holder("data"), undefined, "writes pass again");
  await a.gate.heartbeat();
  assert.deepEqual(a.lost, ["maintenance:1"], "a holder that was presumed dead stops its job");
  // The holder restarted: it claims the bucket anew, and the others answer the new gate.
  await store.present("a", clock.now);
  await store.present("b", clock.now);
  assert.equal(await a.gate.claim(job("maintenance:1", "data")), "created");
  const drained = a.gate.drained("data");
  await b.gate.tick();
  await settle();
  await drained;
  assert.equal(b.local.holder("data"), "maintenance:1@a");
});

Deno.test("a flip reaches every live instance before it returns, even past a holder's death", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const [a, b, c] = ["a", "b", "c"].map((i) => member(store, i, clock));
  for (const m of [a, b, c]) await m.gate.tick();
  await a.gate.claim(job("maintenance:2", "data", "migrate"));
  let applied = false;
  let flipped = false;
  const flipping = a.gate.flip("data", "remote", () => {
    applied = true;
    return Promise.resolve();
  }).then(() => flipped = true);
  await settle();
  assert.equal(applied, true);
  await b.gate.tick();
  await settle();
  assert.equal(flipped, false, "c has not adopted it yet");
  assert.equal(await b.gate.requestCancel("maintenance:2@a", "ops") !== null, true);
  await c.gate.tick();
  await settle();
  await flipping;
  assert.deepEqual([b.adopted, c.adopted], [["data->remote"], ["data->remote"]]);
  // A lapsed gate with a flip is lifted only once every live instance adopted it.
  const d = member(store, "d", clock);
  clock.now += 31_000;
  for (const i of ["b", "c", "d"]) await store.present(i, clock.now);
  await b.gate.tick();
  await settle();
  assert.equal(store.gates.size, 1, "d is live and has not adopted the flip");
  await d.gate.tick(); // adopts, acks, and then every live instance has: lifted
  await settle();
  assert.deepEqual(d.adopted, ["data->remote"]);
  assert.equal(store.gates.size, 0);
});

Deno.test("a clean stop removes the instance's presence: gates stop waiting for it at once", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const [a, b] = ["a", "b"].map((i) => member(store, i, clock));
  await a.gate.tick();
  await b.gate.tick();
  assert.deepEqual([...await store.live(clock.now, 10_000)].sort(), ["a", "b"]);
  await b.gate.stop();
  assert.deepEqual([...await store.live(clock.now, 10_000)], ["a"]);
  assert.equal(await a.gate.claim(job("maintenance:1", "data")), "created");
  await a.gate.drained("data"); // resolves: b left, no ack of it is awaited
  await b.gate.tick(); // a stray step after stop writes no presence again
  assert.equal(store.presence.has("b"), false);
});

Deno.test("a flip is recorded durably before the gate carries it; every listing reads the records", async () => {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore();
  const steps: string[] = [];
  const local = new LocalGate();
  const gate = new FleetGate({
    docs: store,
    instance: "a",
    local,
    adopt: () => Promise.resolve(),
    routes: {
      record: (bucket, backend, job) => {
        const carried = store.gates.get(bucket)?.doc.flip ?? null;
        steps.push(
          `record ${bucket}->${backend} ${job} (gate flip: ${carried?.backend ?? "none"})`,
        );
        return Promise.resolve();
      },
      sync: () => {
        steps.push("sync");
        return Promise.resolve();
      },
    },
    now: () => clock.now,
    sleep: () => new Promise((r) => setTimeout(r, 1)),
  });
  await gate.tick();
  await gate.claim(job("maintenance:7", "data", "migrate"));
  await gate.flip("data", "second", () => {
    steps.push("apply");
    return Promise.resolve();
  });
  assert.deepEqual(steps, [
    "sync",
    "apply",
    "record data->second maintenance:7 (gate flip: none)",
  ]);
  assert.equal(store.gates.get("data")?.doc.flip?.backend, "second");
});
