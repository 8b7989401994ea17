/**
 * `svc admin jobs` in a fleet, against a stand-in server: `list` shows a remote job's holder (a
 * column only when some row has one), `runs` the instance of each run, and `cancel` of a remote
 * id (`maintenance:3@host-1a2b3c4d`) reaches the server's route with its `@` encoded.
 */
import assert from "node:assert/strict";
import type { AdminIo } from "./admin-io.ts";
import type { AdminContext } from "./command.ts";
import { ADMIN_EXIT } from "./exit-codes.ts";
import { AdminHttp } from "./http-client.ts";
import { anyHas, holderText } from "./job-fleet.ts";
import { JOBS_GROUP } from "./jobs-commands.ts";

type Json = Record<string, unknown>;

const REMOTE = "maintenance:3@host-1a2b3c4d";
const LOCAL: Json = {
  id: "maintenance:1",
  type: "reencrypt",
  scope: { bucket: "photos", prefix: "" },
  status: "succeeded",
  progress: { phase: "done", objects_done: 4, objects_failed: 0, bytes_done: 4096 },
};

function remoteRow(heartbeat: string): Json {
  return {
    id: REMOTE,
    type: "reencrypt",
    scope: { bucket: "data", prefix: "" },
    status: "running",
    progress: { phase: "copy", objects_done: 2, objects_failed: 0, bytes_done: 2048 },
    held_by: { instance: "host-1a2b3c4d", heartbeat_at: heartbeat },
  };
}

/** Answers the jobs routes from `jobs` and `runs`; records every request's raw path. */
function standIn(jobs: Json[], runs: Json[]) {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    seen.push(`${request.method} ${path}`);
    if (path === "/_/api/admin/jobs") return Response.json({ jobs });
    if (path.endsWith("/runs")) return Response.json({ runs });
    if (request.method === "POST" && path.endsWith("/cancel")) {
      return Response.json({ ...jobs.at(-1), status: "cancelling" }, { status: 202 });
    }
    return Response.json({ error: "not_found", message: path }, { status: 404 });
  });
  const http = new AdminHttp(new URL(`http://127.0.0.1:${server.addr.port}/`), "svc_session=s");
  return { http, seen, server };
}

function context(http: AdminHttp) {
  const out: string[] = [];
  const io: AdminIo = {
    env: {},
    stdout: (line) => out.push(line),
    stderr: (line) => out.push(`stderr: ${line}`),
    write: (text) => out.push(text),
    stdoutIsTerminal: false,
    columns: () => 100,
    readStdin: () => Promise.resolve(""),
    promptSecret: () => Promise.resolve(undefined),
    sleep: () => Promise.resolve(),
  };
  const ctx: AdminContext = {
    io,
    json: false,
    server: new URL("http://127.0.0.1/"),
    sessionPath: "/nonexistent",
    session: () => Promise.resolve(http),
    anonymous: () => {
      throw new Error("not used");
    },
    printJson: (v) => out.push(JSON.stringify(v)),
  };
  return { ctx, out };
}

async function run(http: AdminHttp, name: string, positionals: string[] = []) {
  const command = JOBS_GROUP.commands.find((c) => c.name === name)!;
  const { ctx, out } = context(http);
  const code = await command.run(ctx, { positionals, flags: {}, help: false });
  return { code, out };
}

Deno.test("holderText: the holder and its heartbeat's age; null for a local job", () => {
  const now = Date.parse("2026-11-29T00:01:00Z");
  assert.equal(
    holderText(remoteRow("2026-11-29T00:00:58Z"), now),
    "host-1a2b3c4d (heartbeat 2s ago)",
  );
  assert.equal(
    holderText(remoteRow("2026-11-29T00:01:03Z"), now),
    "host-1a2b3c4d (heartbeat 0s ago)",
  );
  assert.equal(holderText(LOCAL, now), null);
  assert.equal(anyHas([LOCAL], "held_by"), false);
  assert.equal(anyHas([LOCAL, remoteRow("")], "held_by"), true);
});

Deno.test("jobs list shows a remote job with its holder; alone, no such column", async () => {
  const fleet = standIn([LOCAL, remoteRow(new Date(Date.now() - 4000).toISOString())], []);
  try {
    const { code, out } = await run(fleet.http, "list");
    assert.equal(code, ADMIN_EXIT.ok);
    assert.match(out[0], /^ID\s+TYPE\s+SCOPE\s+STATUS\s+HELD BY\s+PHASE\s+PROGRESS$/);
    const remote = out.find((line) => line.startsWith(REMOTE));
    assert.match(String(remote), /running\s+host-1a2b3c4d \(heartbeat [45]s ago\)\s+copy/);
    assert.match(String(out.find((l) => l.startsWith("maintenance:1 "))), /succeeded\s+-\s+done/);
  } finally {
    await fleet.server.shutdown();
  }
  const single = standIn([LOCAL], []);
  try {
    const { out } = await run(single.http, "list");
    assert.match(out[0], /^ID\s+TYPE\s+SCOPE\s+STATUS\s+PHASE\s+PROGRESS$/);
  } finally {
    await single.server.shutdown();
  }
});

Deno.test("jobs cancel of a remote id sends it encoded; runs name their instance", async () => {
  const runs = [
    { id: 7, instance: "host-b", status: "succeeded", started_at: "2026-11-29T00:00:00Z" },
    { id: 7, instance: "host-a", status: "failed", started_at: "2026-11-28T23:00:00Z" },
  ];
  const { http, seen, server } = standIn([remoteRow(new Date().toISOString())], runs);
  try {
    const cancel = await run(http, "cancel", [REMOTE]);
    assert.equal(cancel.code, ADMIN_EXIT.ok);
    assert.deepEqual(seen, ["POST /_/api/admin/jobs/maintenance:3%40host-1a2b3c4d/cancel"]);
    assert.match(cancel.out[0], /^cancel: maintenance:3@host-1a2b3c4d cancelling/);
    const history = await run(http, "runs", ["lifecycle:tidy"]);
    assert.match(history.out[0], /^RUN\s+INSTANCE\s+STATUS\s+STARTED/);
    assert.match(history.out[1], /^7\s+host-b\s+succeeded/);
    assert.match(history.out[2], /^7\s+host-a\s+failed/);
  } finally {
    await server.shutdown();
  }
});
