/**
 * The console's one set of formatters for numbers people read: sizes in binary units (KiB, MiB,
 * GiB: what `ls -h` and `du -h` show), rates, counts, durations, percents, and the labelled view
 * of `/_/stats`. Pure functions (no DOM), so ui/src/format_test.ts tests them with plain Deno.
 */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/** `1536` → `1.5 KiB`; `20971520` → `20.0 MiB`; `–` when there is no number. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "–";
  const sign = bytes < 0 ? "-" : "";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  // Three significant digits at most: 1.5 KiB, 20.0 MiB, 512 KiB.
  const text = unit === 0 ? String(Math.round(value)) : value.toFixed(value < 100 ? 1 : 0);
  return `${sign}${text} ${UNITS[unit]}`;
}

/** Bytes per second: `2.0 MiB/s`. */
export function formatRate(bytesPerSec: number | null | undefined): string {
  if (bytesPerSec === null || bytesPerSec === undefined || !Number.isFinite(bytesPerSec)) {
    return "–";
  }
  return `${formatBytes(bytesPerSec)}/s`;
}

const COUNT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A count with thousands separators: `12,345`. */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  return COUNT.format(n);
}

/** A percent with at most one decimal: `42.5 %`. */
export function formatPercent(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return "–";
  return `${Math.round(p * 10) / 10} %`;
}

/** Seconds as people say them: `45 s`, `3 min 20 s`, `2 h 05 min`, `3 d 4 h`. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) {
    return "–";
  }
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, "0")} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** Field names holding bytes (`logical_bytes`, `bytes_done`, `size`, `total_stored_size`). */
const BYTES_FIELD = /(^|_)bytes($|_)|(^|_)size$/;
const RATE_FIELD = /bytes_per_sec$/;

/**
 * The text of a JSON value in a table cell: byte fields in binary units, objects compactly.
 * Rows whose shape the UI does not know still get readable sizes.
 */
export function cellText(key: string, value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") {
    if (RATE_FIELD.test(key)) return formatRate(value);
    if (BYTES_FIELD.test(key)) return formatBytes(value);
    if (key.endsWith("percentage") || key === "percent") return formatPercent(value);
    return String(value);
  }
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** A flat record of counters in words: `objects_done 60 · bytes_done 240 KiB` (byte fields readable). */
export function countersText(counters: Record<string, unknown> | null | undefined): string {
  const entries = Object.entries(counters ?? {}).filter(([, v]) => v !== null && v !== undefined);
  if (entries.length === 0) return "–";
  return entries.map(([key, value]) => `${key} ${cellText(key, value)}`).join(" · ");
}

/** Labels of the `/_/stats` fields the console knows; others show under their own name. */
const STAT_LABELS: Record<string, string> = {
  total_objects: "Objects",
  total_original_size: "Logical size (what clients stored)",
  total_stored_size: "Stored size (on the backends)",
  savings_percentage: "Space saved",
};

/** `/_/stats` as labelled, readable rows (the per-bucket map is the Usage page's). */
export function statsEntries(stats: Record<string, unknown>): { label: string; text: string }[] {
  const rows: { label: string; text: string }[] = [];
  for (const [key, value] of Object.entries(stats)) {
    if (typeof value === "object" && value !== null) continue;
    const label = STAT_LABELS[key] ?? key.replaceAll("_", " ");
    const text = key === "total_objects" && typeof value === "number"
      ? formatCount(value)
      : cellText(key, value);
    rows.push({ label, text });
  }
  const logical = stats.total_original_size, stored = stats.total_stored_size;
  if (typeof logical === "number" && typeof stored === "number") {
    rows.push({ label: "Bytes saved", text: formatBytes(logical - stored) });
  }
  return rows;
}

/**
 * The x range of a time chart (unix seconds) from its samples' own times: their span, but at
 * least `minSpan` seconds ending at the newest. Taken from the data, not from the min and max
 * uPlot proposes: for a single sample uPlot proposes `min + 86400 / ms`, which with its unit of
 * seconds (ms = 1e-3) is 86.4 million seconds, an axis from this year to nearly three years on.
 */
export function timeRange(times: ArrayLike<number | null>, minSpan = 60): [number, number] {
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < times.length; i++) {
    const t = times[i];
    if (t === null || !Number.isFinite(t)) continue;
    if (t < min) min = t;
    if (t > max) max = t;
  }
  if (max === -Infinity) {
    const now = Date.now() / 1000;
    return [now - minSpan, now];
  }
  return max - min < minSpan ? [max - minSpan, max] : [min, max];
}

/**
 * Ticks of a byte axis from 0 to `max` at a round step in binary units (1, 2 or 5 × KiB, MiB,
 * …), about `count` of them: `0 B, 1.0 MiB, 2.0 MiB` rather than uPlot's decimal `977 KiB`.
 */
export function byteSplits(max: number, count = 4): number[] {
  if (!Number.isFinite(max) || max <= 0) return [0];
  const raw = max / count;
  const power = Math.min(6, Math.max(0, Math.floor(Math.log(raw) / Math.log(1024))));
  const unit = 1024 ** power;
  const step = unit * ([1, 2, 5, 10, 20, 50, 100, 200, 500].find((n) => n >= raw / unit) ?? 1024);
  const ticks: number[] = [];
  for (let at = 0; at <= max; at += step) ticks.push(at);
  return ticks;
}

/** The y range of a chart of non-negative values: from 0, with headroom, never empty. */
export function valueRange(max: number): [number, number] {
  return [0, Number.isFinite(max) && max > 0 ? max * 1.1 : 1];
}

/** How long ago `value` (an ISO time or Unix ms) was, as of `now`: `4 s ago`; `–` when unknown. */
export function formatAgo(value: string | number | null | undefined, now: number): string {
  const at = typeof value === "number" ? value : Date.parse(value ?? "");
  if (!Number.isFinite(at)) return "–";
  // A heartbeat stamped by another instance's clock can be slightly ahead of this one.
  return `${formatDuration(Math.max(0, (now - at) / 1000))} ago`;
}
