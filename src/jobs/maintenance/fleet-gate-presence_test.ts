import assert from "node:assert/strict";
import type { S3Client } from "../../storage/mod.ts";
import { GateDocs } from "./fleet-gate-docs.ts";
import { FleetPresence, PRESENCE_STALE_MS } from "./fleet-gate-presence.ts";

const HOUR = 3_600_000;

/** Presence documents in memory with their last write, and every call made. */
class Docs {
  written = new Map<string, number>();
  calls: string[] = [];
  absentAnswer: () => Promise<void> = () => Promise.resolve();
  present(instance: string, at: number) {
    this.calls.push(`present ${instance}`);
    this.written.set(instance, at);
    return Promise.resolve();
  }
  absent(instance: string) {
    this.calls.push(`absent ${instance}`);
    this.written.delete(instance);
    return this.absentAnswer();
  }
  sweepPresence(before: number) {
    this.calls.push("sweep");
    const gone = [...this.written].filter(([, at]) => at < before).map(([i]) => i);
    for (const i of gone) this.written.delete(i);
    return Promise.resolve(gone);
  }
}

Deno.test("presence: written every presenceMs; week-old documents swept at most once an hour", async () => {
  const clock = { now: 50 * 24 * HOUR };
  const docs = new Docs();
  docs.written.set("stopped", clock.now - PRESENCE_STALE_MS - 1);
  docs.written.set("quiet-a-day", clock.now - 24 * HOUR);
  const presence = new FleetPresence(docs, "me", { now: () => clock.now, presenceMs: 3000 });
  await presence.tick();
  await presence.sweeping;
  assert.deepEqual([...docs.written.keys()].sort(), ["me", "quiet-a-day"]);
  assert.deepEqual(docs.calls, ["present me", "sweep"]);
  clock.now += 1000;
  await presence.tick();
  assert.deepEqual(docs.calls.length, 2, "neither a presence nor a sweep is due after 1 s");
  clock.now += 2000;
  await presence.tick();
  assert.deepEqual(docs.calls.slice(2), ["present me"], "presence every 3 s, no sweep");
  docs.written.set("stopped-later", clock.now - PRESENCE_STALE_MS - 1);
  clock.now += HOUR - 3000 - 1;
  await presence.tick();
  assert.equal(docs.calls.filter((c) => c === "sweep").length, 1, "not before an hour");
  clock.now += 1;
  await presence.tick();
  await presence.sweeping;
  assert.equal(docs.calls.filter((c) => c === "sweep").length, 2);
  assert.equal(docs.written.has("stopped-later"), false);
});

Deno.test("presence: leave deletes it once, never throws, waits a bounded time", async () => {
  const clock = { now: 1_000_000 };
  const docs = new Docs();
  const presence = new FleetPresence(docs, "me", {
    now: () => clock.now,
    presenceMs: 3000,
    leaveWaitMs: 50,
  });
  await presence.tick();
  await presence.leave();
  assert.equal(docs.written.has("me"), false);
  clock.now += 10_000;
  await presence.tick();
  assert.equal(docs.written.has("me"), false, "no presence after leaving");

  docs.absentAnswer = () => Promise.reject(new Error("coordination bucket down"));
  await presence.leave(); // logged, not thrown

  let answer: () => void = () => {};
  docs.absentAnswer = () => new Promise<void>((resolve) => answer = resolve);
  const started = Date.now();
  await presence.leave();
  const waited = Date.now() - started;
  assert.ok(waited >= 40 && waited < 1000, `waited ${waited} ms for a store that never answers`);
  answer(); // the delete may still end later; nothing rejects then
});

/** A coordination bucket answering the presence listing and recording deletions. */
function fakeClient(objects: { key: string; modified: string }[], deleted: string[]): S3Client {
  const send = (request: { method: string; key?: string; query?: Record<string, unknown> }) => {
    if (request.method === "DELETE") {
      deleted.push(request.key!);
      return Promise.resolve({ text: "", headers: new Headers() });
    }
    assert.equal(request.query?.prefix, "_svc/instances/");
    const contents = objects.map((o) =>
      `<Contents><Key>${o.key}</Key><ETag>"e"</ETag><Size>30</Size>` +
      `<LastModified>${o.modified}</LastModified></Contents>`
    ).join("");
    const xml = `<ListBucketResult><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`;
    return Promise.resolve({ text: xml, headers: new Headers() });
  };
  return { send } as unknown as S3Client;
}

Deno.test("GateDocs: the sweep judges Last-Modified; leaving deletes the encoded key", async () => {
  const deleted: string[] = [];
  const now = Date.parse("2026-11-29T00:00:00Z");
  const docs = new GateDocs(
    fakeClient([
      { key: "_svc/instances/old%2Fhost.json", modified: "2026-11-20T00:00:00.000Z" },
      { key: "_svc/instances/recent.json", modified: "2026-11-28T23:59:58.000Z" },
    ], deleted),
    "coord",
  );
  assert.deepEqual(await docs.sweepPresence(now - PRESENCE_STALE_MS), ["old/host"]);
  assert.deepEqual(deleted, ["_svc/instances/old%2Fhost.json"]);
  await docs.absent("host/1");
  assert.deepEqual(deleted.at(-1), "_svc/instances/host%2F1.json");
});
