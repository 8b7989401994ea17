/** Rows of the operations routes: jobs, usage, the event outbox, logs, and `/_/` probes. */
import { reencryptBody } from "./described-bodies.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const jobs = area("Jobs");
const usage = area("Usage");
const events = area("Event outbox");
const logs = area("Logs");
const probes = area("Probes");
const job = { id: "The job's id." };
const limit = { limit: "At most this many rows." };
const logFilter = {
  limit: "At most this many entries.",
  level: "At least this level (trace, debug, info, warn, error).",
  target: "Only this logger (svc::s3, svc::admin, …).",
  q: "Only entries whose text holds this.",
};

export const OPS_ROUTES: RouteSpec[] = [
  jobs.get("/jobs", "List jobs (maintenance, replication, lifecycle)", { returns: "`{jobs}`." }),
  jobs.get("/jobs/bucket/:bucket", "The jobs' state for one bucket", {
    access: "browse",
    params: { bucket: "The bucket (one the session's user may see)." },
  }),
  jobs.post("/jobs/reencrypt", "Start re-encrypt jobs", {
    body: reencryptBody,
    status: 202,
    returns: "`{started, …}`: the jobs started and the buckets refused.",
  }),
  jobs.get("/jobs/:id", "One job", { params: job }),
  jobs.get("/jobs/:id/runs", "A job's runs, newest first", {
    params: job,
    query: limit,
    returns: "`{runs}`; in a fleet every instance's runs of a rule, each naming its `instance`.",
  }),
  jobs.get("/jobs/:id/failures", "A job's failed objects", {
    params: job,
    query: limit,
    returns: "`{failures}`.",
  }),
  jobs.post("/jobs/:id/:action", "Act on a job", {
    params: {
      ...job,
      action: "pause, resume, run-now, preview, verify, kill, cancel or delete (405 when the " +
        "job's kind does not support it).",
    },
    returns: "The job's answer (200, or 202 when work started).",
  }),
  usage.get("/usage", "Storage used, all buckets", { returns: "The totals and `scan`." }),
  usage.get("/usage/bucket/:bucket", "Storage used by one bucket", {
    params: { bucket: "The bucket." },
  }),
  usage.post("/usage/scan", "Recount every bucket in the background", {
    status: 202,
    returns: "`{started, scan}`.",
  }),
  usage.post("/usage/refresh", "Recount one bucket now", {
    query: { bucket: "The bucket." },
    requiredQuery: ["bucket"],
  }),
  usage.get("/deltaspace/savings", "Delta savings per deltaspace", {
    query: { bucket: "Only this bucket.", limit: "At most this many deltaspaces." },
  }),
  events.get("/event-outbox", "A page of the event outbox", {
    query: {
      status: "Only rows in this state.",
      limit: "Page size (default 50).",
      offset: "Rows skipped.",
      sort: "occurred_at (default) or another column.",
      order: "asc or desc (default).",
    },
    returns: "`{rows, counts, total, limit, offset}`.",
  }),
  events.post("/event-outbox/requeue", "Requeue every failed event", {
    returns: "`{requeued}`.",
  }),
  events.post("/event-outbox/:id/requeue", "Requeue one failed event", {
    params: { id: "The outbox row (a positive integer)." },
  }),
  logs.get("/logs", "Recent log entries", { query: logFilter, returns: "`{entries}`." }),
  logs.get("/logs/stream", "Live log tail (Server-Sent Events)", {
    query: { ...logFilter, after: "Resume after this entry (or Last-Event-ID)." },
    produces: "text/event-stream",
  }),
  logs.get("/audit", "Recent audit events", { query: limit, returns: "`{entries}`." }),
  probes.get("/_/health", "Liveness (no backend I/O)", {
    access: "public",
    returns: '`{"status": "ok"}`.',
  }),
  probes.get("/_/ready", "Readiness: the backend and the config database answer", {
    access: "public",
    returns: "200 when ready, 503 naming the failing check.",
  }),
  probes.get("/_/metrics", "Prometheus metrics", {
    access: "public",
    produces: "text/plain",
  }),
  probes.get("/_/stats", "Storage statistics (all buckets or one)", {
    query: { bucket: "Only this bucket." },
  }),
];
