/**
 * Dashboard: requests, errors, latency, bytes saved and cache hit rate, sampled from `/_/metrics`
 * every 5 s while the page is open and drawn with uPlot (charts.ts), with the archives waiting for
 * their background conversion (`svc_archive_backlog`); storage totals from `/_/stats`, labelled
 * and in binary units.
 */
import { useEffect, useState } from "preact/hooks";
import { call, describe } from "../api.ts";
import { html } from "../html.ts";
import { parseMetrics, total } from "../prom.ts";
import { ErrorText, formatBytes, Section, useLoad } from "../widgets.ts";
import { TimeChart, unitText } from "../charts.ts";
import { statsEntries } from "../format.ts";
import { linkClick } from "../router.ts";

const SAMPLE_MS = 5000;
const KEEP = 120;

interface Point {
  t: number;
  requests: number;
  errors: number;
  latencyMs: number;
  saved: number;
  hitRate: number;
  /** Archives stored as they came, waiting to become deltas (docs/DELTA.md). */
  backlog: number;
}

function snapshot(text: string) {
  const s = parseMetrics(text);
  return {
    requests: total(s, "svc_http_requests_total"),
    errors: total(s, "svc_http_requests_total", (l) => Number(l.status) >= 500),
    durationSum: total(s, "svc_http_request_duration_seconds_sum"),
    durationCount: total(s, "svc_http_request_duration_seconds_count"),
    saved: total(s, "svc_delta_bytes_saved_total"),
    hits: total(s, "svc_cache_hits_total"),
    misses: total(s, "svc_cache_misses_total"),
    backlog: total(s, "svc_archive_backlog"),
  };
}

export function DashboardPage() {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<string | null>(null);
  const stats = useLoad(() => call<Record<string, unknown>>("/_/stats"));
  useEffect(() => {
    let previous: ReturnType<typeof snapshot> | null = null;
    let previousAt = 0;
    let live = true;
    const sample = async () => {
      try {
        const text = await call<string>("/_/metrics");
        const now = snapshot(text);
        const at = performance.now();
        if (previous && live) {
          const dt = Math.max(0.001, (at - previousAt) / 1000);
          const count = now.durationCount - previous.durationCount;
          const lookups = now.hits - previous.hits + now.misses - previous.misses;
          const point: Point = {
            // Unix seconds: uPlot's time unit (milliseconds would land the axis in the far future).
            t: Date.now() / 1000,
            requests: (now.requests - previous.requests) / dt,
            errors: (now.errors - previous.errors) / dt,
            latencyMs: count > 0 ? ((now.durationSum - previous.durationSum) / count) * 1000 : 0,
            saved: now.saved,
            hitRate: lookups > 0 ? (now.hits - previous.hits) / lookups : 0,
            backlog: now.backlog,
          };
          setPoints((p) => [...p.slice(-KEEP + 1), point]);
        }
        previous = now;
        previousAt = at;
        setError(null);
      } catch (err) {
        if (live) setError(describe(err));
      }
    };
    // A second sample after one second, so the tiles show rates at once; then every 5 s.
    sample().then(() => live && setTimeout(sample, 1000));
    const timer = setInterval(sample, SAMPLE_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  const last = points[points.length - 1];
  const times = points.map((p) => p.t);
  return html`
    <div class="dashboard">
      <${ErrorText} error=${error} />
      <div class="tiles">
        <div class="tile"><span>Requests/s</span><strong>${last
          ? last.requests.toFixed(1)
          : "…"}</strong></div>
        <div class="tile"><span>Errors/s (5xx)</span><strong>${last
          ? last.errors.toFixed(2)
          : "…"}</strong></div>
        <div class="tile"><span>Mean latency</span><strong>${last
          ? unitText("ms", last.latencyMs)
          : "…"}</strong></div>
        <div class="tile"><span>Bytes saved</span><strong>${last
          ? formatBytes(last.saved)
          : "…"}</strong></div>
        <div class="tile"><span>Cache hit rate</span><strong>${last
          ? `${(last.hitRate * 100).toFixed(0)} %`
          : "…"}</strong></div>
        <div class="tile" data-tile="backlog"
          title="Archives stored as they came, waiting to become deltas">
          <span>Archives to convert</span><strong>${last ? String(last.backlog) : "…"}</strong>
        </div>
      </div>
      <p class="muted">Sampled every ${SAMPLE_MS /
        1000} s from /_/metrics while this page is open.</p>
      <div class="charts">
        <${TimeChart} title="Requests and 5xx errors per second" unit="count" times=${times}
          series=${[
            { label: "requests/s", values: points.map((p) => p.requests) },
            { label: "errors/s", values: points.map((p) => p.errors) },
          ]} />
        <${TimeChart} title="Mean latency" unit="ms" times=${times}
          series=${[{ label: "latency", values: points.map((p) => p.latencyMs) }]} />
        <${TimeChart} title="Bytes saved by delta compression" unit="bytes" times=${times}
          series=${[{ label: "saved", values: points.map((p) => p.saved) }]} />
        <${TimeChart} title="Cache hit rate" unit="ratio" times=${times}
          series=${[{ label: "hit rate", values: points.map((p) => p.hitRate) }]} />
      </div>
      <${Section} title="Storage">
          <${ErrorText} error=${stats.error} />
          ${stats.data
            ? html`
              <dl class="meta stats">${statsEntries(stats.data).map(({ label, text }) =>
                html`
                  <dt>${label}</dt>
                  <dd>${text}</dd>
                `
              )}</dl>
              <p
                class="muted">From /_/stats; per bucket on the <a href="/_/usage" onClick=${linkClick}>Usage</a> page.</p>
            `
            : null}
        <//>
      </div>
  `;
}
