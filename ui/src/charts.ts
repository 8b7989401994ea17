/**
 * The console's two chart shapes, drawn with uPlot in a `figure.chart.card`:
 *
 * - `TimeChart`: values over time (the dashboard's samples). x is unix seconds (uPlot's unit;
 *   never milliseconds) over the samples' own span, at least a minute (`timeRange`): for a
 *   single sample uPlot's own range was 86.4 million seconds wide (2027 to 2029 on the axis). Values start at 0 and carry
 *   their unit on the axis and in the legend (bytes in KiB/MiB/GiB).
 * - `BytesBarChart`: two byte figures side by side per name (logical against stored per
 *   bucket: the Usage and Diagnostics pages).
 *
 * Both print their newest figure under the chart in words, so what the canvas shows can also be
 * read (and tested) as text.
 */
import uPlot from "uplot";
import { useEffect, useRef } from "preact/hooks";
import { html } from "./html.ts";
import {
  byteSplits,
  formatBytes,
  formatCount,
  formatPercent,
  timeRange,
  valueRange,
} from "./format.ts";
import { formatTime } from "./widgets.ts";

export const COLORS = ["#2f7ed8", "#d9534f", "#5cb85c", "#f0ad4e"];

/** Tick labels of the time axis: the time of day (the span is minutes, never years). */
const CLOCK = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

/**
 * Keeps the labels an axis draws on its box as `data-x-ticks` / `data-y-ticks` (`|`-joined):
 * the canvas holds them as pixels only, and the browser test reads what the axes say here.
 */
function drawn(box: HTMLElement | null, name: "xTicks" | "yTicks", labels: string[]): string[] {
  if (box) box.dataset[name] = labels.join("|");
  return labels;
}

export type ChartUnit = "bytes" | "count" | "ms" | "ratio";

/** The text of one value in `unit` (axis ticks, legend, the line under the chart). */
export function unitText(unit: ChartUnit, value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  switch (unit) {
    case "bytes":
      return formatBytes(value);
    case "ms":
      return `${formatCount(Math.round(value * 10) / 10)} ms`;
    case "ratio":
      return formatPercent(value * 100);
    default:
      return formatCount(Math.round(value * 100) / 100);
  }
}

export interface TimeSeries {
  label: string;
  values: number[];
}

export function TimeChart(
  { title, times, series, unit }: {
    title: string;
    /** Unix seconds, one per sample. */
    times: number[];
    series: TimeSeries[];
    unit: ChartUnit;
  },
) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const width = Math.max(260, Math.min(560, box.current!.clientWidth || 400));
    const text = (_u: uPlot, v: number | null) => unitText(unit, v);
    plot.current = new uPlot(
      {
        width,
        height: 180,
        scales: {
          x: { time: true, range: (u) => timeRange(u.data[0]) },
          y: { range: (_u, _min, max) => valueRange(max) },
        },
        series: [
          { value: (_u: uPlot, v: number | null) => v === null ? "–" : formatTime(v * 1000) },
          ...series.map(({ label }, i) => ({ label, stroke: COLORS[i], width: 2, value: text })),
        ],
        axes: [
          {
            stroke: "currentColor",
            // "20:22:30" takes ~60 px: a tick every 80 px keeps the labels apart.
            space: 80,
            values: (_u: uPlot, splits: number[]) =>
              drawn(box.current, "xTicks", splits.map((t) => CLOCK.format(t * 1000))),
          },
          {
            stroke: "currentColor",
            size: unit === "bytes" ? 76 : 56,
            ...(unit === "bytes" ? { splits: (u: uPlot) => byteSplits(u.scales.y.max ?? 0) } : {}),
            values: (u: uPlot, splits: number[]) =>
              drawn(box.current, "yTicks", splits.map((v) => text(u, v))),
          },
        ],
      },
      [[], ...series.map(() => [])],
      box.current!,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)]);
  }, [times, series]);
  const at = times.length - 1;
  const latest = at < 0
    ? "No sample yet."
    : `${formatTime(times[at] * 1000)}: ${
      series.map((s) => `${s.label} ${unitText(unit, s.values[at])}`).join(", ")
    }`;
  return html`
    <figure class="chart card">
      <figcaption>${title}</figcaption>
      <div ref=${box}></div>
      <p class="muted latest">${latest}</p>
    </figure>
  `;
}

export interface BarSeries {
  label: string;
  color: string;
  values: number[];
}

/** Two byte series side by side per name (the first left of the tick, the second right). */
export function BytesBarChart(
  { title, names, series }: { title: string; names: string[]; series: [BarSeries, BarSeries] },
) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (names.length === 0) return;
    const left = uPlot.paths.bars!({ size: [0.35, 60], align: -1 });
    const right = uPlot.paths.bars!({ size: [0.35, 60], align: 1 });
    const top = Math.max(1, ...series.flatMap((s) => s.values));
    const plot = new uPlot(
      {
        width: Math.max(300, Math.min(720, box.current!.clientWidth || 480)),
        height: 220,
        scales: {
          x: { time: false, range: [-0.5, names.length - 0.5] },
          y: { range: [0, top * 1.1] },
        },
        series: [
          { value: (_u: uPlot, i: number | null) => i === null ? "–" : names[i] ?? "" },
          ...series.map((s, i) => ({
            label: s.label,
            stroke: s.color,
            fill: `${s.color}aa`,
            paths: i === 0 ? left : right,
            value: (_u: uPlot, v: number | null) => formatBytes(v),
          })),
        ],
        axes: [
          {
            stroke: "currentColor",
            splits: () => names.map((_, i) => i),
            values: (_u: uPlot, splits: number[]) => splits.map((i) => names[i] ?? ""),
          },
          {
            stroke: "currentColor",
            size: 76,
            splits: (u: uPlot) => byteSplits(u.scales.y.max ?? 0),
            values: (_u: uPlot, v: number[]) => drawn(box.current, "yTicks", v.map(formatBytes)),
          },
        ],
      },
      [names.map((_, i) => i), ...series.map((s) => s.values)],
      box.current!,
    );
    return () => plot.destroy();
  }, [names, series]);
  return html`
    <figure class="chart card bars">
      <figcaption>${title}</figcaption>
      <div ref=${box}></div>
      <p class="muted latest">${series.map((s) =>
        `${s.label} ${formatBytes(s.values.reduce((a, b) => a + b, 0))}`
      ).join(" · ")} in all</p>
    </figure>
  `;
}
