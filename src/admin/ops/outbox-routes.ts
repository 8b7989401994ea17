/**
 * The event outbox in the admin API (under `/_/api/admin`, a session required):
 *
 * - `GET /event-outbox[?status=&limit=&offset=&sort=occurred_at&order=asc|desc]`: a page of rows
 *   (newest first by default; `limit` 1-1000, default 50) plus the count of rows per status and
 *   the total matching `status`;
 * - `POST /event-outbox/:id/requeue`: one failed row back to pending, due now, attempts reset
 *   (404 unknown id, 409 when the row is not failed);
 * - `POST /event-outbox/requeue`: every failed row, `{requeued: n}`.
 *
 * Rows never show endpoint URLs (a Slack webhook path or a query may hold a token): only how many
 * targets already took the event. Requeues are audited (`event_outbox_requeued`,
 * `event_outbox_requeued_all`).
 */
import { Hono } from "hono";
import {
  OUTBOX_STATUSES,
  type OutboxRow,
  type OutboxStatus,
  type OutboxStore,
} from "../../events/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";

export interface OutboxRoutesDeps {
  store: Pick<OutboxStore, "list" | "counts" | "get" | "requeue">;
  audit: AuditFn;
  now?: () => number;
}

const MAX_LIMIT = 1000;

function intParam(name: string, text: string | undefined, fallback: number, min: number) {
  if (text === undefined || text === "") return fallback;
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < min) {
    throw new AdminError(
      "bad_request",
      `${name} must be an integer of at least ${min}, got "${text}"`,
    );
  }
  return Number(text);
}

function iso(ms: number | null): string | null {
  return ms === null || ms === 0 ? null : new Date(ms).toISOString();
}

/** A row as the API shows it. */
export function rowJson(row: OutboxRow): Record<string, unknown> {
  return {
    id: row.id,
    event_id: row.event.id,
    kind: row.event.kind,
    bucket: row.event.bucket,
    key: row.event.key,
    status: row.status,
    attempts: row.attempts,
    occurred_at: iso(row.occurredAt),
    next_attempt_at: row.status === "pending" ? iso(row.nextAttemptAt) : null,
    finished_at: iso(row.finishedAt),
    delivered_targets: row.deliveredTargets.length,
    last_error: row.lastError,
    event: { ...row.event, seq: row.id },
  };
}

export function outboxRoutes(deps: OutboxRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const now = deps.now ?? Date.now;

  app.get("/event-outbox", async (c) => {
    const status = c.req.query("status");
    if (
      status !== undefined && status !== "" && !OUTBOX_STATUSES.includes(status as OutboxStatus)
    ) {
      throw new AdminError(
        "bad_request",
        `status must be one of ${OUTBOX_STATUSES.join(", ")}, got "${status}"`,
      );
    }
    const sort = c.req.query("sort") ?? "occurred_at";
    if (sort !== "occurred_at") {
      throw new AdminError("bad_request", `sort must be occurred_at, got "${sort}"`);
    }
    const order = (c.req.query("order") ?? "desc").toLowerCase();
    if (order !== "asc" && order !== "desc") {
      throw new AdminError("bad_request", `order must be asc or desc, got "${order}"`);
    }
    const limit = Math.min(MAX_LIMIT, intParam("limit", c.req.query("limit"), 50, 1));
    const offset = intParam("offset", c.req.query("offset"), 0, 0);
    const filter = status ? status as OutboxStatus : undefined;
    const [rows, counts] = await Promise.all([
      deps.store.list({ status: filter, limit, offset, order }),
      deps.store.counts(),
    ]);
    const total = filter ? counts[filter] : Object.values(counts).reduce((a, b) => a + b, 0);
    return c.json({ rows: rows.map(rowJson), counts, total, limit, offset });
  });

  app.post("/event-outbox/requeue", async (c) => {
    const requeued = await deps.store.requeue(undefined, now());
    deps.audit("event_outbox_requeued_all", { ...actorFields(c.var), count: requeued });
    return c.json({ requeued });
  });

  app.post("/event-outbox/:id/requeue", async (c) => {
    const text = c.req.param("id");
    if (!/^\d{1,15}$/.test(text) || Number(text) < 1) {
      throw new AdminError(
        "bad_request",
        `The outbox id must be a positive integer, got "${text}"`,
      );
    }
    const id = Number(text);
    const row = await deps.store.get(id);
    if (row === null) throw new AdminError("not_found", `No outbox row ${id}`);
    if (row.status !== "failed") {
      throw new AdminError("conflict", `Outbox row ${id} is ${row.status}, not failed`, {
        status: row.status,
      });
    }
    const requeued = await deps.store.requeue(id, now());
    if (requeued === 0) {
      throw new AdminError("conflict", `Outbox row ${id} changed while being requeued`);
    }
    deps.audit("event_outbox_requeued", { ...actorFields(c.var), id, event_id: row.event.id });
    return c.json({ requeued, id });
  });

  return app;
}
