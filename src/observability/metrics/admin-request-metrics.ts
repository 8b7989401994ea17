/** `svc_admin_requests_total`: admin-plane requests (`/_/api/…`, `/_/stats`) by area and status. */
import type { MetricRegistry } from "./metric-registry.ts";
import { isHttpStatus, METHOD_NAMES } from "./http-metrics.ts";

export interface AdminRequestSample {
  method: string;
  path: string;
  status: number;
}

/**
 * The bounded `area` label of an admin request: the first segment after `/_/api/admin/`, when it
 * is one svc serves, else `other` (a path a client made up never becomes a label value).
 */
const ADMIN_AREAS = new Set([
  "event-outbox",
  "login",
  "logout",
  "session",
  "password",
  "recover-db",
  "config",
  "backends",
  "buckets",
  "test-s3",
  "audit",
  "logs",
  "users",
  "groups",
  "iam",
  "policies",
  "jobs",
  "backup",
  "usage",
  "deltaspace",
  "objects",
]);

export function adminArea(path: string): string {
  if (path === "/_/api/whoami") return "whoami";
  if (path === "/_/stats" || path === "/_/stats/") return "stats";
  const match = /^\/_\/api\/admin\/([a-z0-9-]+)/.exec(path);
  return match && ADMIN_AREAS.has(match[1]) ? match[1] : "other";
}

/** Registers the family; the answer counts one finished admin request (PATCH included). */
export function adminRequestMetrics(
  { counter }: MetricRegistry,
): (sample: AdminRequestSample) => void {
  const adminRequests = counter(
    "svc_admin_requests_total",
    "Admin-plane requests (/_/api, /_/stats) by area, method and status.",
    ["area", "method", "status"],
  );
  return (sample) => {
    const method = sample.method.toUpperCase();
    if (!METHOD_NAMES.has(method) && method !== "PATCH") return;
    if (!isHttpStatus(sample.status)) return;
    adminRequests.inc({ area: adminArea(sample.path), method, status: String(sample.status) });
  };
}
