/** Rows of the diagnostics routes (delta efficiency, the integrity scan) and of this document. */
import {
  efficiencyScanBody,
  scanStartBody,
  verifyBody,
} from "../diagnostics/diagnostics-bodies.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const diagnostics = area("Diagnostics");
const meta = area("API description");
const bucket = { bucket: "Only this bucket." };
const report = "`{computed_at, grade_scale, totals, buckets}`.";

export const DIAGNOSTICS_ROUTES: RouteSpec[] = [
  diagnostics.get("/diagnostics/delta-efficiency", "The delta-efficiency report (cached)", {
    query: { ...bucket, limit: "Deltaspaces per bucket (default 100, at most 1000)." },
    returns: report,
  }),
  diagnostics.post("/diagnostics/delta-efficiency/scan", "Recompute the report", {
    body: efficiencyScanBody,
    returns: report,
  }),
  diagnostics.post("/diagnostics/delta-efficiency/verify", "Rebuild deltas and check them", {
    body: verifyBody,
    returns: "`{checked, failed, results}`.",
  }),
  diagnostics.get("/diagnostics/scan", "The integrity scan's status", { query: bucket }),
  diagnostics.get("/diagnostics/scan/status", "The integrity scan's status", { query: bucket }),
  diagnostics.post("/diagnostics/scan/start", "Start the integrity scan", {
    body: scanStartBody,
    status: 202,
    returns: "`{started, scan}` (started false: one is running).",
  }),
  diagnostics.post("/diagnostics/scan/stop", "Stop the integrity scan", {
    returns: "`{stopped, scan}`.",
  }),
  diagnostics.get("/diagnostics/scan/stream", "The scan's status as Server-Sent Events", {
    query: { ...bucket, interval_ms: "Between events (default 1000, at least 200)." },
    produces: "text/event-stream",
  }),
  meta.get("/openapi.json", "This document (OpenAPI 3.1)", {
    access: "public",
    returns: "The admin API's description: routes and shapes only, no setting or secret.",
  }),
];
