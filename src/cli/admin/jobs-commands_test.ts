/**
 * `follow` against a stand-in server that advances a job on every poll: a bar redrawn in place
 * on a terminal, plain lines in a pipe, exit 1 for a failed job and for a timeout.
 */
import assert from "node:assert/strict";
import type { AdminIo } from "./admin-io.ts";
import type { AdminContext } from "./command.ts";
import { ADMIN_EXIT, AdminCliError } from "./exit-codes.ts";
import { AdminHttp } from "./http-client.ts";
import { follow } from "./jobs-commands.ts";

type Json = Record<string, unknown>;

/** Serves `/_/api/admin/jobs/:id` from `rows`, one row per poll (the last one repeats). */
function standIn(rows: Json[]) {
  let polls = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    assert.equal(new URL(request.url).pathname, "/_/api/admin/jobs/maintenance:7");
    assert.equal(request.headers.get("cookie"), "svc_session=s");
    return Response.json(rows[Math.min(polls++, rows.length - 1)]);
  });
  const url = new URL(`http://127.0.0.1:${server.addr.port}/`);
  return { http: new AdminHttp(url, "svc_session=s"), polls: () => polls, server };
}

function context(terminal: boolean, json = false) {
  const out: string[] = [];
  const written: string[] = [];
  const err: string[] = [];
  const io: AdminIo = {
    env: {},
    stdout: (line) => out.push(line),
    stderr: (line) => err.push(line),
    write: (text) => written.push(text),
    stdoutIsTerminal: terminal,
    columns: () => 100,
    readStdin: () => Promise.resolve(""),
    promptSecret: () => Promise.resolve(undefined),
    sleep: () => Promise.resolve(),
  };
  const unused = () => Promise.reject(new Error("not used by follow"));
  const ctx: AdminContext = {
    io,
    json,
    server: new URL("http://127.0.0.1/"),
    sessionPath: "/nonexistent",
    session: unused,
    anonymous: () => {
      throw new Error("not used by follow");
    },
    printJson: (v) => out.push(JSON.stringify(v)),
  };
  return { ctx, out, written, err };
}

const row = (status: string, done: number, extra: Json = {}) => ({
  id: "maintenance:7",
  status,
  paused: false,
  progress: {
    phase: "copy",
    objects_done: done,
    objects_failed: 0,
    bytes_done: done * 1024,
    ...extra,
  },
  error: status === "failed" ? "backend went away" : null,
});

Deno.test("follow on a terminal redraws one line with a bar, then ends it", async () => {
  const { http, polls, server } = standIn([
    row("queued", 0, { total: 4 }),
    row("running", 2, { total: 4, eta_seconds: 65 }),
    row("succeeded", 4, { total: 4 }),
  ]);
  try {
    const { ctx, out, written } = context(true);
    assert.equal(await follow(ctx, http, "maintenance:7", 10, undefined), ADMIN_EXIT.ok);
    assert.equal(polls(), 3);
    assert.equal(written.length, 4, JSON.stringify(written));
    assert.match(written[0], /^\rmaintenance:7 queued \(copy\) \[-+\] 0%, 0\/4 objects/);
    assert.ok(written[0].endsWith("\u001b[K"), "each redraw erases the rest of the line");
    assert.match(
      written[1],
      /^\rmaintenance:7 running \(copy\) \[#+-+\] 50%, 2\/4 objects, 2\.00 KiB, eta 1m05s/,
    );
    assert.match(written[2], /\[#+\] 100%/);
    assert.equal(written[3], "\n");
    assert.deepEqual(out, ["Job maintenance:7 succeeded"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("follow in a pipe prints a plain line per change; a failed job exits 1", async () => {
  const { http, server } = standIn([
    row("running", 1),
    row("running", 1),
    row("running", 3),
    row("failed", 3),
  ]);
  try {
    const { ctx, out, written, err } = context(false);
    assert.equal(await follow(ctx, http, "maintenance:7", 10, undefined), ADMIN_EXIT.failed);
    assert.deepEqual(written, []);
    assert.deepEqual(out, [
      "maintenance:7 running (copy) 1 objects, 1.00 KiB",
      "maintenance:7 running (copy) 3 objects, 3.00 KiB",
      "maintenance:7 failed (copy) 3 objects, 3.00 KiB",
    ]);
    assert.deepEqual(err, ["svc: job maintenance:7 ended failed: backend went away"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("follow --json prints the final row; --timeout gives up with exit 1", async () => {
  const { http, server } = standIn([row("running", 1), row("succeeded", 2)]);
  try {
    const { ctx, out } = context(true, true);
    assert.equal(await follow(ctx, http, "maintenance:7", 10, undefined), ADMIN_EXIT.ok);
    assert.equal(JSON.parse(out.at(-1)!).status, "succeeded");
  } finally {
    await server.shutdown();
  }
  const stuck = standIn([row("running", 1)]);
  try {
    const { ctx } = context(false);
    await assert.rejects(
      () => follow(ctx, stuck.http, "maintenance:7", 1, 0),
      (err: unknown) =>
        err instanceof AdminCliError && err.exitCode === ADMIN_EXIT.failed &&
        /still running after 0 s/.test(err.message),
    );
  } finally {
    await stuck.server.shutdown();
  }
});
