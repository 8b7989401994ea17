/**
 * Diagnostics: delta savings per bucket and per deltaspace (GET /diagnostics/delta-efficiency,
 * a uPlot bar chart of logical against stored bytes), why objects went passthrough, a delta
 * verify, and the integrity scan with live progress (SSE from /diagnostics/scan/stream), its
 * per-bucket counters and findings, with start and stop.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { type BarSeries, BytesBarChart, COLORS } from "../charts.ts";
import { ADMIN, call } from "../api.ts";
import { html } from "../html.ts";
import {
  ErrorText,
  formatBytes,
  formatTime,
  Notice,
  RowsTable,
  Section,
  useAction,
  useLoad,
  valueOf,
} from "../widgets.ts";

type Row = Record<string, unknown> & {
  objects: number;
  logical_bytes: number;
  stored_bytes: number;
  savings_percentage: number;
  grade: string;
  kinds: Record<string, number>;
  passthrough_reasons: Record<string, number>;
};
type BucketRow = Row & { bucket: string; deltaspaces: (Row & { deltaspace: string })[] };
type Report = { computed_at: number | null; totals: Row; buckets: BucketRow[] };
type Finding = { bucket: string; key: string; kind: string; detail: string; found_at: number };
type Scan = Record<string, unknown> & {
  state: string;
  running: boolean;
  totals: Record<string, number>;
  buckets?: Record<string, Record<string, unknown>>;
  findings: Finding[];
  findings_total: number;
  buckets_total?: number;
  buckets_done?: number;
  cursor?: { bucket: string; after: string | null } | null;
};

const counts = (c: Record<string, number>) =>
  Object.entries(c).map(([k, n]) => `${k}: ${n}`).join(", ") || "–";

function summary(row: Row, name: string) {
  return {
    name,
    objects: row.objects,
    logical: formatBytes(row.logical_bytes),
    stored: formatBytes(row.stored_bytes),
    savings: `${row.savings_percentage} %`,
    grade: row.grade,
    kinds: counts(row.kinds),
    passthrough_reasons: counts(row.passthrough_reasons),
  };
}

export function DiagnosticsPage() {
  return html`
    <div class="diagnostics">
      <${Savings} />
      <${Scrub} />
    </div>
  `;
}

function Savings() {
  const report = useLoad(() => call<Report>("diagnostics/delta-efficiency"));
  const action = useAction();
  const [bucket, setBucket] = useState("");
  const [verify, setVerify] = useState<Record<string, unknown> | null>(null);
  const data = report.data;
  const chosen = data?.buckets.find((b) => b.bucket === bucket) ?? data?.buckets[0];
  return html`
    <${Section} title="Delta savings" actions=${html`
      <button disabled=${action.busy} onClick=${() =>
        action.run(
          () => call("diagnostics/delta-efficiency/scan", { method: "POST", body: {} }),
          () => {
            report.reload();
            return "Report recomputed.";
          },
        )}>Rescan</button>
      <button disabled=${action.busy} onClick=${() =>
        action.run(
          () =>
            call<Record<string, unknown>>("diagnostics/delta-efficiency/verify", {
              method: "POST",
              body: { limit: 50, sample: true },
            }),
          (result) => {
            setVerify(result);
            return `Verified ${result.checked} deltas: ${result.failed} failed.`;
          },
        )}>Verify deltas</button>
    `}>
      <${ErrorText} error=${action.error ?? report.error} />
      <${Notice} text=${action.notice} />
      ${data
        ? html`
          <p class="muted">Computed ${formatTime(data.computed_at)}. Grades: A ≥ 75 %, B ≥ 50 %,
            C ≥ 25 %, D ≥ 5 %, E ≥ 0 %, F below (stored bytes exceed the data).</p>
          <${SavingsChart} buckets=${data.buckets} />
          <${RowsTable} rows=${[
            ...data.buckets.map((b) => summary(b, b.bucket)),
            summary(data.totals, "(all buckets)"),
          ]} />
          ${data.buckets.length > 0
            ? html`
              <h3>Deltaspaces of <select name="bucket" value=${chosen?.bucket}
                onChange=${(e: Event) => setBucket(valueOf(e))}>
                ${data.buckets.map((b) => html`<option value=${b.bucket}>${b.bucket}</option>`)}
              </select></h3>
              <${RowsTable} rows=${(chosen?.deltaspaces ?? []).map((d) => ({
                ...summary(d, d.deltaspace || "(root)"),
                group_key: d.group_key ?? "",
              }))} />
            `
            : null}
        `
        : html`<p class="muted">Loading…</p>`}
      ${verify
        ? html`
          <h3>Verify</h3>
          <${RowsTable} rows=${(verify.results as Record<string, unknown>[]) ?? []} columns=${[
            "bucket",
            "key",
            "deltaspace",
            "outcome",
            "detail",
          ]} />
        `
        : null}
    <//>
  `;
}

function SavingsChart({ buckets }: { buckets: BucketRow[] }) {
  // Built once per report: a new array would redraw the chart at every render.
  const chart = useMemo(() => ({
    names: buckets.map((b) => b.bucket),
    series: [
      { label: "logical", color: COLORS[0], values: buckets.map((b) => b.logical_bytes) },
      { label: "stored", color: COLORS[2], values: buckets.map((b) => b.stored_bytes) },
    ] as [BarSeries, BarSeries],
  }), [buckets]);
  if (buckets.length === 0) return null;
  return html`<${BytesBarChart} title="Logical against stored bytes per bucket" ...${chart} />`;
}

function Scrub() {
  const [scan, setScan] = useState<Scan | null>(null);
  const [live, setLive] = useState("connecting");
  const [bucket, setBucket] = useState("");
  const [rate, setRate] = useState("");
  const action = useAction();
  useEffect(() => {
    const source = new EventSource(`${ADMIN}/diagnostics/scan/stream?interval_ms=500`);
    source.onopen = () => setLive("live");
    source.addEventListener("progress", (event) => {
      setScan(JSON.parse((event as MessageEvent).data) as Scan);
    });
    source.onerror = () => setLive("reconnecting");
    return () => source.close();
  }, []);
  const start = () =>
    action.run(
      () =>
        call<{ started: boolean }>("diagnostics/scan/start", {
          method: "POST",
          body: {
            ...(bucket ? { bucket } : {}),
            ...(rate ? { bytes_per_sec: Math.round(Number(rate) * 1024 * 1024) } : {}),
          },
        }),
      (r) => r.started ? "Integrity scan started." : "A scan is already running.",
    );
  const stop = () =>
    action.run(() => call("diagnostics/scan/stop", { method: "POST" }), () => "Scan stopped.");
  const totals = scan?.totals ?? {};
  return html`
    <${Section} title="Integrity scan" actions=${html`
      <span class="status" data-status=${live}>${live}</span>
      <button disabled=${action.busy || scan?.running} onClick=${start}>Start scan</button>
      <button disabled=${action.busy || !scan?.running} onClick=${stop}>Stop</button>
    `}>
      <form class="inline" onSubmit=${(e: Event) => e.preventDefault()}>
        <label>Bucket <input name="scan-bucket" placeholder="all buckets" value=${bucket}
          onInput=${(e: Event) => setBucket(valueOf(e))} /></label>
        <label>MiB/s <input name="scan-rate" placeholder="default" value=${rate}
          onInput=${(e: Event) => setRate(valueOf(e))} /></label>
      </form>
      <${ErrorText} error=${action.error} />
      <${Notice} text=${action.notice} />
      ${scan
        ? html`
          <p class="scan-state" data-state=${scan.state}>
            State: <b>${scan.state}</b>
            ${scan.buckets_total !== undefined
              ? ` · buckets ${scan.buckets_done}/${scan.buckets_total}`
              : ""}
            ${` · objects ${totals.objects_checked ?? 0} (ok ${totals.objects_ok ?? 0}, failed ${
              totals.objects_failed ?? 0
            }) · read ${formatBytes(totals.bytes_read ?? 0)} · findings ${scan.findings_total}`}
            ${scan.cursor ? ` · at ${scan.cursor.bucket}/${scan.cursor.after ?? ""}` : ""}
          </p>
          <${RowsTable} rows=${Object.entries(scan.buckets ?? {}).map(([name, p]) => ({
            bucket: name,
            ...p,
          }))} columns=${[
            "bucket",
            "state",
            "objects_checked",
            "objects_ok",
            "objects_failed",
            "baselines_checked",
            "bytes_read",
            "findings",
          ]} />
          <h3>Findings</h3>
          <div class="findings">
            <${RowsTable} rows=${scan.findings.map((f) => ({
              ...f,
              found_at: formatTime(f.found_at),
            }))} columns=${["kind", "bucket", "key", "detail", "found_at"]} />
          </div>
        `
        : html`<p class="muted">Waiting for the scan status…</p>`}
    <//>
  `;
}
