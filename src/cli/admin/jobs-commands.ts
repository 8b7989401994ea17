/**
 * `svc admin jobs …` over `/jobs`: the rows with their progress, one job, its runs and failures,
 * the per-kind actions (run-now, pause, resume, cancel; the server answers 405 with the supported
 * ones for a kind that has not the action), starting maintenance jobs (re-encrypt, migrate), and
 * `follow`, which polls a job until it is no longer queued or running: a bar redrawn in place on a
 * terminal, a line per change otherwise. Exit 1 when it ends failed or cancelled.
 */
import { flagNumber, flagString, type ParsedArgs } from "./args.ts";
import type { AdminCommand, AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { fields, humanTime, table } from "./format.ts";
import type { AdminHttp, Json } from "./http-client.ts";
import { anyHas, holderText } from "./job-fleet.ts";
import {
  ACTIVE_STATUSES,
  FAILED_STATUSES,
  progressLine,
  progressText,
  progressView,
} from "./job-progress.ts";

const ONE: [number, number] = [1, 1];
/**
 * `/jobs/<id>`; the id's `:` (`maintenance:3`) stays readable in messages, everything else is
 * encoded (a remote job's `@`: `maintenance:3%40host-1a2b3c4d`).
 */
const jobPath = (id: string) => `/jobs/${encodeURIComponent(id).replaceAll("%3A", ":")}`;

const scopeOf = (job: Json) => {
  const scope = (job.scope ?? {}) as Json;
  const where = scope.bucket ? `${scope.bucket}${scope.prefix ? `/${scope.prefix}` : ""}` : "";
  return scope.target ? `${where} -> ${scope.target}` : where;
};

async function list(ctx: AdminContext): Promise<number> {
  const answer = await (await ctx.session()).json<Json>("GET", "/jobs");
  if (ctx.json) {
    ctx.printJson(answer);
    return ADMIN_EXIT.ok;
  }
  const jobs = answer.jobs as Json[];
  if (jobs.length === 0) {
    ctx.io.stdout("(no jobs)");
    return ADMIN_EXIT.ok;
  }
  // In a fleet, jobs other instances run carry their holder: a column then, none alone.
  const held = anyHas(jobs, "held_by");
  const now = Date.now();
  const rows = jobs.map((job) => [
    job.id,
    job.type,
    scopeOf(job),
    `${job.status}${job.paused === true ? " (paused)" : ""}`,
    ...(held ? [holderText(job, now)] : []),
    progressView(job).phase,
    progressText(progressView(job)),
  ]);
  const headers = ["id", "type", "scope", "status", ...(held ? ["held by"] : []), "phase"];
  for (const line of table([...headers, "progress"], rows)) ctx.io.stdout(line);
  return ADMIN_EXIT.ok;
}

function printJob(ctx: AdminContext, job: Json): void {
  const run = (job.last_run ?? null) as Json | null;
  for (
    const line of fields([
      ["id", job.id],
      ["kind", job.kind],
      ["type", job.type],
      ["scope", scopeOf(job)],
      ["status", `${job.status}${job.paused === true ? " (paused)" : ""}`],
      ...(job.held_by ? [["held by", holderText(job, Date.now())] as [string, unknown]] : []),
      ["progress", progressLine(job)],
      ["actions", job.actions],
      ["created", `${humanTime(job.created_at)}${job.created_by ? ` by ${job.created_by}` : ""}`],
      ["last run", run ? `${run.status} ${humanTime(run.started_at)}` : null],
      ["error", job.error],
    ])
  ) ctx.io.stdout(line);
}

async function show(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const job = await (await ctx.session()).json<Json>("GET", jobPath(args.positionals[0]));
  if (ctx.json) ctx.printJson(job);
  else printJob(ctx, job);
  return ADMIN_EXIT.ok;
}

const history = (what: "runs" | "failures"): AdminCommand => ({
  name: what,
  usage: "<id> [--limit <n>]",
  summary: what === "runs" ? "Lists a job's recent runs." : "Lists a job's failed objects.",
  flags: { limit: "string" },
  positionals: ONE,
  run: async (ctx, args) => {
    const limit = String(flagNumber(args, "limit", 50));
    const answer = await (await ctx.session()).json<Json>(
      "GET",
      `${jobPath(args.positionals[0])}/${what}`,
      { query: { limit } },
    );
    if (ctx.json) ctx.printJson(answer);
    else if (what === "runs") {
      // A fleet's history names the instance of each run (run ids are per instance).
      const fleet = anyHas(answer.runs as Json[], "instance");
      const rows = (answer.runs as Json[]).map((r) => [
        r.id,
        ...(fleet ? [r.instance] : []),
        r.status,
        humanTime(r.started_at),
        humanTime(r.finished_at),
        r.triggered_by,
        r.counters,
        r.error,
      ]);
      const headers = ["run", ...(fleet ? ["instance"] : []), "status", "started", "finished"];
      headers.push("by", "counters", "error");
      for (const line of table(headers, rows)) ctx.io.stdout(line);
    } else {
      const rows = (answer.failures as Json[]).map((f) => [
        humanTime(f.occurred_at),
        f.bucket,
        f.object_key,
        f.error_message,
      ]);
      for (const line of table(["when", "bucket", "key", "error"], rows)) ctx.io.stdout(line);
    }
    return ADMIN_EXIT.ok;
  },
});

const action = (name: string, summary: string): AdminCommand => ({
  name,
  usage: "<id>",
  summary,
  positionals: ONE,
  run: async (ctx, args) => {
    const id = args.positionals[0];
    const answer = await (await ctx.session()).json<Json>("POST", `${jobPath(id)}/${name}`);
    if (ctx.json) ctx.printJson(answer);
    else if (typeof answer.status === "string" && answer.id !== undefined) {
      ctx.io.stdout(`${name}: ${progressLine(answer)}`);
    } else {
      ctx.io.stdout(`${name} ${id}: done`);
      const scalars = Object.entries(answer).filter(([, v]) => v === null || typeof v !== "object");
      for (const line of fields(scalars)) ctx.io.stdout(`  ${line}`);
    }
    return ADMIN_EXIT.ok;
  },
});

/** Polls the job until it leaves the active statuses; the exit code says how it ended. */
export async function follow(
  ctx: AdminContext,
  http: AdminHttp,
  id: string,
  intervalMs: number,
  timeoutMs: number | undefined,
): Promise<number> {
  const started = Date.now();
  const terminal = ctx.io.stdoutIsTerminal && !ctx.json;
  let last = "";
  let job: Json;
  while (true) {
    job = await http.json<Json>("GET", jobPath(id));
    if (terminal) ctx.io.write(`\r${progressLine(job, ctx.io.columns())}\x1b[K`);
    else if (!ctx.json) {
      const line = progressLine(job);
      if (line !== last) ctx.io.stdout(line);
      last = line;
    }
    if (!ACTIVE_STATUSES.has(String(job.status))) break;
    if (timeoutMs !== undefined && Date.now() - started >= timeoutMs) {
      if (terminal) ctx.io.write("\n");
      throw new AdminCliError(
        ADMIN_EXIT.failed,
        `Job ${id} is still ${job.status} after ${timeoutMs / 1000} s (it goes on)`,
      );
    }
    await ctx.io.sleep(intervalMs);
  }
  if (terminal) ctx.io.write("\n");
  if (ctx.json) ctx.printJson(job);
  const failed = FAILED_STATUSES.has(String(job.status));
  if (failed) {
    ctx.io.stderr(`svc: job ${id} ended ${job.status}${job.error ? `: ${job.error}` : ""}`);
  } else if (!ctx.json) ctx.io.stdout(`Job ${id} ${job.status}`);
  return failed ? ADMIN_EXIT.failed : ADMIN_EXIT.ok;
}

const FOLLOW_FLAGS = { interval: "string", timeout: "string" } as const;
const FOLLOW_HELP = [
  "  --interval <s>   seconds between polls (default 1)",
  "  --timeout <s>    give up (exit 1) after this long; the job goes on",
];
const followArgs = (args: ParsedArgs) => ({
  interval: flagNumber(args, "interval", 1) * 1000,
  timeout: flagString(args, "timeout") === undefined
    ? undefined
    : flagNumber(args, "timeout", 1) * 1000,
});

/** Starts maintenance jobs; with --follow waits for each. */
async function started(ctx: AdminContext, http: AdminHttp, ids: string[], args: ParsedArgs) {
  if (args.flags.follow !== true) return ADMIN_EXIT.ok;
  const { interval, timeout } = followArgs(args);
  let code: number = ADMIN_EXIT.ok;
  for (const id of ids) code = Math.max(code, await follow(ctx, http, id, interval, timeout));
  return code;
}

export const JOBS_GROUP: AdminGroup = {
  name: "jobs",
  summary: "replication, lifecycle and maintenance jobs",
  commands: [
    {
      name: "list",
      usage: "",
      summary: "Lists every job with its status and progress.",
      run: list,
    },
    { name: "show", usage: "<id>", summary: "Shows one job.", positionals: ONE, run: show },
    history("runs"),
    history("failures"),
    action("run-now", "Runs a replication or lifecycle rule now."),
    action("pause", "Pauses a replication or lifecycle rule (kept across restarts)."),
    action("resume", "Resumes a paused rule."),
    action("cancel", "Cancels a maintenance job (re-encrypt, migrate)."),
    {
      name: "follow",
      usage: "<id> [--interval <s>] [--timeout <s>]",
      summary: "Waits for a job to finish, showing its progress (a bar on a terminal, a line " +
        "per change otherwise). Exit 0 when it succeeded, 1 when it failed or was cancelled.",
      details: FOLLOW_HELP,
      flags: FOLLOW_FLAGS,
      positionals: ONE,
      run: async (ctx, args) => {
        const { interval, timeout } = followArgs(args);
        return await follow(ctx, await ctx.session(), args.positionals[0], interval, timeout);
      },
    },
    {
      name: "reencrypt",
      usage: "<bucket>... [--follow]",
      summary: "Starts a job per bucket rewriting every stored object under the current " +
        "encryption settings.",
      details: FOLLOW_HELP,
      flags: { follow: "boolean", ...FOLLOW_FLAGS },
      positionals: [1, 100],
      run: async (ctx, args) => {
        const http = await ctx.session();
        const answer = await http.json<Json>("POST", "/jobs/reencrypt", {
          json: { buckets: args.positionals },
        });
        if (ctx.json && args.flags.follow !== true) ctx.printJson(answer);
        const ids = (answer.started as Json[]).map((s) => String(s.id));
        if (!ctx.json) {
          for (const s of answer.started as Json[]) ctx.io.stdout(`Started ${s.id} (${s.bucket})`);
        }
        for (const e of (answer.errors ?? []) as Json[]) {
          ctx.io.stderr(`svc: ${e.bucket}: ${e.message} (${e.error})`);
        }
        const code = await started(ctx, http, ids, args);
        return (answer.errors as Json[] | undefined)?.length ? ADMIN_EXIT.failed : code;
      },
    },
    {
      name: "migrate",
      usage: "<bucket> --to <backend> [--delete-source] [--follow]",
      summary: "Starts a job moving a bucket to another backend.",
      details: [
        "  --to <backend>    the target backend",
        "  --delete-source   delete the source objects once the bucket is moved",
        ...FOLLOW_HELP,
      ],
      flags: { to: "string", "delete-source": "boolean", follow: "boolean", ...FOLLOW_FLAGS },
      positionals: ONE,
      run: async (ctx, args) => {
        const target = flagString(args, "to");
        if (!target) throw usageError("jobs migrate needs --to <backend>");
        const http = await ctx.session();
        const answer = await http.json<Json>(
          "POST",
          `/buckets/${encodeURIComponent(args.positionals[0])}/migrate`,
          { json: { target_backend: target, delete_source: args.flags["delete-source"] === true } },
        );
        if (ctx.json && args.flags.follow !== true) ctx.printJson(answer);
        else if (!ctx.json) ctx.io.stdout(`Started ${answer.id}`);
        return await started(ctx, http, [String(answer.id)], args);
      },
    },
  ],
};
