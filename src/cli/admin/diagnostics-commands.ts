/**
 * `svc admin diagnostics …` over `/diagnostics`: the delta-efficiency report (cached, or
 * `--rescan`), verifying a sample of deltas, and the integrity scan (start, status, stop).
 * docs/DELTA.md "Diagnostics" explains the numbers.
 */
import { flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, usageError } from "./exit-codes.ts";
import { fields, humanBytes, humanTime, table } from "./format.ts";
import type { Json } from "./http-client.ts";

/** An optional positive integer flag, kept as given (the server checks its range). */
function intFlag(args: ParsedArgs, name: string): number | undefined {
  const raw = flagString(args, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw usageError(`--${name} must be a whole number, got "${raw}"`);
  return Number(raw);
}

const percent = (value: unknown) => typeof value === "number" ? `${value.toFixed(1)}%` : "-";

async function efficiency(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const http = await ctx.session();
  const bucket = flagString(args, "bucket");
  const limit = intFlag(args, "limit");
  const report = args.flags.rescan === true
    ? await http.json<Json>("POST", "/diagnostics/delta-efficiency/scan", {
      json: { bucket, limit },
    })
    : await http.json<Json>("GET", "/diagnostics/delta-efficiency", {
      query: { bucket, limit: limit === undefined ? undefined : String(limit) },
    });
  if (ctx.json) {
    ctx.printJson(report);
    return ADMIN_EXIT.ok;
  }
  const row = (name: unknown, r: Json) => [
    name,
    r.objects,
    humanBytes(r.logical_bytes),
    humanBytes(r.stored_bytes),
    humanBytes(r.saved_bytes),
    percent(r.savings_percentage),
    r.grade,
  ];
  const rows = ((report.buckets ?? []) as Json[]).map((b) => row(b.bucket ?? b.name, b));
  rows.push(row("(total)", (report.totals ?? {}) as Json));
  const headers = ["bucket", "objects", "logical", "stored", "saved", "savings", "grade"];
  for (const line of table(headers, rows)) ctx.io.stdout(line);
  ctx.io.stdout(`computed ${humanTime(report.computed_at)}`);
  return ADMIN_EXIT.ok;
}

async function verify(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const body = {
    bucket: flagString(args, "bucket"),
    limit: intFlag(args, "limit"),
    sample: args.flags.sample === true ? true : undefined,
  };
  const report = await (await ctx.session()).json<Json>(
    "POST",
    "/diagnostics/delta-efficiency/verify",
    { json: body },
  );
  if (ctx.json) ctx.printJson(report);
  else {
    const scalars = Object.entries(report).filter(([, v]) => v === null || typeof v !== "object");
    for (const line of fields(scalars)) ctx.io.stdout(line);
  }
  return typeof report.failed === "number" && report.failed > 0 ? ADMIN_EXIT.failed : ADMIN_EXIT.ok;
}

function printScan(ctx: AdminContext, scan: Json): void {
  const totals = (scan.totals ?? {}) as Json;
  const entries: [string, unknown][] = [
    ["state", scan.state],
    ["run", scan.run_id],
    [
      "buckets",
      scan.buckets_total === undefined ? null : `${scan.buckets_done}/${scan.buckets_total}`,
    ],
    ["started", humanTime(scan.started_at)],
    ["finished", humanTime(scan.finished_at)],
    ["rate", typeof scan.bytes_per_sec === "number" ? `${humanBytes(scan.bytes_per_sec)}/s` : null],
    ["findings", scan.findings_total],
    ...Object.entries(totals).filter(([k, v]) => typeof v === "number" && k !== "findings")
      .map(([k, v]): [string, unknown] => [k, k.includes("bytes") ? humanBytes(v) : v]),
    ...(scan.error ? [["error", scan.error] as [string, unknown]] : []),
  ];
  for (const line of fields(entries)) ctx.io.stdout(line);
}

async function scan(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const verb = args.positionals[0];
  const http = await ctx.session();
  const bucket = flagString(args, "bucket");
  let answer: Json;
  let scanState: Json;
  if (verb === "status") {
    answer = await http.json<Json>("GET", "/diagnostics/scan/status", { query: { bucket } });
    scanState = answer;
  } else if (verb === "start") {
    const rate = intFlag(args, "bytes-per-sec");
    answer = await http.json<Json>("POST", "/diagnostics/scan/start", {
      json: { bucket, bytes_per_sec: rate },
    });
    scanState = answer.scan as Json;
    if (!ctx.json) {
      ctx.io.stdout(answer.started ? "Scan started" : "A scan is already running");
    }
  } else if (verb === "stop") {
    answer = await http.json<Json>("POST", "/diagnostics/scan/stop", { json: {} });
    scanState = answer.scan as Json;
    if (!ctx.json) ctx.io.stdout(answer.stopped ? "Scan stopped" : "No scan was running");
  } else throw usageError(`diagnostics scan takes start, status or stop, got "${verb}"`);
  if (ctx.json) ctx.printJson(answer);
  else printScan(ctx, scanState ?? {});
  return ADMIN_EXIT.ok;
}

export const DIAGNOSTICS_GROUP: AdminGroup = {
  name: "diagnostics",
  summary: "delta efficiency and the integrity scan",
  commands: [
    {
      name: "delta-efficiency",
      usage: "[--bucket <b>] [--limit <n>] [--rescan]",
      summary: "Shows how much delta compression saves, per bucket (cached; --rescan scans now).",
      flags: { bucket: "string", limit: "string", rescan: "boolean" },
      run: efficiency,
    },
    {
      name: "verify",
      usage: "[--bucket <b>] [--limit <n>] [--sample]",
      summary: "Rebuilds up to --limit deltas (default 20) and checks each sha256; exit 1 when " +
        "any fails.",
      flags: { bucket: "string", limit: "string", sample: "boolean" },
      run: verify,
    },
    {
      name: "scan",
      usage: "start|status|stop [--bucket <b>] [--bytes-per-sec <n>]",
      summary: "The integrity scan: start it (all buckets or --bucket), show its status, stop it.",
      flags: { bucket: "string", "bytes-per-sec": "string" },
      positionals: [1, 1],
      run: scan,
    },
  ],
};
