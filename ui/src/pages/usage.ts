/**
 * Usage: what each bucket holds and what delta compression saves. Per bucket (GET /usage, the
 * counters `/_/stats` also answers from): objects, logical bytes (what clients stored), stored
 * bytes (what the backends hold) and the savings, with a bar chart of logical against stored;
 * per deltaspace (GET /deltaspace/savings): the objects stored as deltas, their baseline and
 * what they save. Rescans (one bucket, or all in the background) re-establish the counters.
 */
import { useMemo } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { type BarSeries, BytesBarChart, COLORS } from "../charts.ts";
import { formatBytes, formatCount, formatPercent } from "../format.ts";
import { ErrorText, formatTime, Notice, Section, useAction, useLoad } from "../widgets.ts";
import { linkClick } from "../router.ts";

interface BucketUsage {
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  savings_percentage: number;
  last_scan_at: number | null;
  never_scanned: boolean;
}

interface Usage {
  total_objects: number;
  total_original_size: number;
  total_stored_size: number;
  savings_percentage: number;
  buckets: Record<string, BucketUsage>;
  scan?: { running?: boolean; state?: string; buckets_done?: number; buckets_total?: number };
}

interface Deltaspace {
  bucket: string;
  prefix: string;
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  baseline_bytes: number;
  saved_bytes: number;
  savings_percentage: number;
}

interface Savings {
  computed_at: number;
  deltaspaces: Deltaspace[];
  totals: { object_count: number; saved_bytes: number; savings_percentage: number };
  total_deltaspaces: number;
  truncated: boolean;
}

function Tile({ label, value, name }: { label: string; value: string; name: string }) {
  return html`<div class="tile" data-tile=${name}><span>${label}</span><strong>${value}</strong></div>`;
}

export function UsagePage() {
  const usage = useLoad(() => call<Usage>("usage"));
  const savings = useLoad(() => call<Savings>("deltaspace/savings?limit=200"));
  const action = useAction();
  const buckets = useMemo(
    () => Object.entries(usage.data?.buckets ?? {}).sort(([a], [b]) => a < b ? -1 : 1),
    [usage.data],
  );
  const chart = useMemo(() => ({
    names: buckets.map(([name]) => name),
    series: [
      { label: "logical", color: COLORS[0], values: buckets.map(([, u]) => u.logical_bytes) },
      { label: "stored", color: COLORS[2], values: buckets.map(([, u]) => u.stored_bytes) },
    ] as [BarSeries, BarSeries],
  }), [buckets]);
  const data = usage.data;
  const reload = () => {
    usage.reload();
    savings.reload();
  };
  return html`
    <div class="usage">
      <${ErrorText} error=${action.error ?? usage.error} />
      <${Notice} text=${action.notice} />
      ${data
        ? html`
          <div class="tiles">
            <${Tile} name="objects" label="Objects" value=${formatCount(data.total_objects)} />
            <${Tile} name="logical" label="Logical size" value=${formatBytes(
              data.total_original_size,
            )} />
            <${Tile} name="stored" label="Stored size" value=${formatBytes(
              data.total_stored_size,
            )} />
            <${Tile} name="saved" label="Saved" value=${`${
              formatBytes(data.total_original_size - data.total_stored_size)
            } (${formatPercent(data.savings_percentage)})`} />
          </div>
        `
        : null}
      ${buckets.length > 0
        ? html`
          <div class="charts">
            <${BytesBarChart} title="Logical against stored bytes per bucket" ...${chart} />
          </div>
        `
        : null}
      <${Section} title="Buckets" actions=${html`
        <button onClick=${reload}>Refresh</button>
        <button onClick=${() =>
          action.run(
            () => call("usage/scan", { method: "POST" }),
            () => "A rescan of every bucket started; refresh to see it.",
          )}>Rescan all</button>
      `}>
        ${data?.scan?.running
          ? html`<p class="muted">Rescanning: ${data.scan.buckets_done ?? 0} of ${
            data.scan
              .buckets_total ?? "?"
          } buckets.</p>`
          : null}
        ${buckets.length === 0
          ? html`<p class="muted">${usage.loading ? "Loading…" : "No buckets yet."}</p>`
          : html`
            <div class="scroll">
              <table class="usage-buckets">
                <thead>
                  <tr>
                    <th>Bucket</th>
                    <th class="num">Objects</th>
                    <th class="num">Logical</th>
                    <th class="num">Stored</th>
                    <th class="num">Saved</th>
                    <th class="num">Savings</th>
                    <th>Counted</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>${buckets.map(([name, u]) =>
                  html`
                    <tr data-bucket=${name}>
                      <td><a href=${`/_/browse/${
                        encodeURIComponent(name)
                      }`} onClick=${linkClick}>${name}</a></td>
                      <td class="num">${formatCount(u.object_count)}</td>
                      <td class="num">${formatBytes(u.logical_bytes)}</td>
                      <td class="num">${formatBytes(u.stored_bytes)}</td>
                      <td class="num">${formatBytes(u.logical_bytes - u.stored_bytes)}</td>
                      <td class="num">${formatPercent(u.savings_percentage)}</td>
                      <td>${u.never_scanned ? "never" : formatTime(u.last_scan_at)}</td>
                      <td class="actions"><button onClick=${() =>
                        action.run(
                          () =>
                            call(`usage/refresh?bucket=${encodeURIComponent(name)}`, {
                              method: "POST",
                            }),
                          () => {
                            reload();
                            return `Bucket ${name} recounted.`;
                          },
                        )}>Rescan</button></td>
                    </tr>
                  `
                )}</tbody>
              </table>
            </div>
          `}
      <//>
      <${Deltaspaces} savings=${savings} />
    </div>
  `;
}

function Deltaspaces({ savings }: { savings: ReturnType<typeof useLoad<Savings>> }) {
  const report = savings.data;
  return html`
    <${Section} title="Delta savings per deltaspace">
      <${ErrorText} error=${savings.error} />
      ${report
        ? html`<p class="muted">
            ${formatCount(report.totals.object_count)} objects stored as deltas save ${
          formatBytes(
            report.totals.saved_bytes,
          )
        } (${formatPercent(report.totals.savings_percentage)}); computed ${
          formatTime(
            report.computed_at,
          )
        }. Grades and a delta verify are on <a href="/_/diagnostics" onClick=${linkClick}
            >Diagnostics</a>.
          </p>`
        : null}
      ${report && report.deltaspaces.length === 0
        ? html`<p class="muted">No deltaspace holds a delta yet.</p>`
        : null}
      ${report && report.deltaspaces.length > 0
        ? html`
          <div class="scroll">
            <table class="usage-deltaspaces">
              <thead>
                <tr>
                  <th>Bucket</th>
                  <th>Deltaspace</th>
                  <th class="num">Deltas</th>
                  <th class="num">Logical</th>
                  <th class="num">Stored</th>
                  <th class="num">Baseline</th>
                  <th class="num">Saved</th>
                  <th class="num">Savings</th>
                </tr>
              </thead>
              <tbody>${report.deltaspaces.map((d) =>
                html`
                  <tr data-deltaspace=${`${d.bucket}/${d.prefix}`}>
                    <td>${d.bucket}</td>
                    <td>${d.prefix || "(bucket root)"}</td>
                    <td class="num">${formatCount(d.object_count)}</td>
                    <td class="num">${formatBytes(d.logical_bytes)}</td>
                    <td class="num">${formatBytes(d.stored_bytes)}</td>
                    <td class="num">${formatBytes(d.baseline_bytes)}</td>
                    <td class="num">${formatBytes(d.saved_bytes)}</td>
                    <td class="num">${formatPercent(d.savings_percentage)}</td>
                  </tr>
                `
              )}</tbody>
            </table>
          </div>
                  ${report.truncated
                    ? html`<p class="muted">The ${report.deltaspaces.length} deltaspaces saving most of ${report.total_deltaspaces}.</p>`
                    : null}
        `
        : null}
    <//>
  `;
}
