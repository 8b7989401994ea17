/**
 * Human output of `svc admin …`: sizes in binary units, durations, aligned tables. Pure, so it is
 * unit-tested; `--json` bypasses all of it and prints the API's own JSON.
 */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** `1536` → `1.5 KiB`; whole bytes below 1 KiB; `-` for a value that is not a number. */
export function humanBytes(bytes: unknown): string {
  if (typeof bytes !== "number" || !Number.isFinite(bytes) || bytes < 0) return "-";
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${value} B`;
  const shown = value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
  return `${shown} ${UNITS[unit]}`;
}

/** Seconds as `42s`, `3m05s`, `2h07m`, `3d04h`; `-` for a value that is not a number. */
export function humanDuration(seconds: unknown): string {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) return "-";
  const s = Math.round(seconds);
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d${pad(Math.floor((s % 86400) / 3600))}h`;
}

/** A JSON value as one table cell: lists joined, nulls as `-`, objects as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (Array.isArray(value)) return value.length === 0 ? "-" : value.map(cell).join(",");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** Rows under a header, columns padded to their widest cell (two spaces between). */
export function table(headers: string[], rows: unknown[][]): string[] {
  const cells = rows.map((row) => row.map(cell));
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...cells.map((row) => (row[i] ?? "").length))
  );
  const line = (row: string[]) =>
    row.map((value, i) => i === row.length - 1 ? value : value.padEnd(widths[i])).join("  ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)];
}

/** `key: value` lines, keys padded: a readable view of one record. */
export function fields(entries: [string, unknown][]): string[] {
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${cell(value)}`);
}

/** Unix ms or an ISO string as `2026-11-28 20:14:52Z`; `-` otherwise. */
export function humanTime(value: unknown): string {
  if (typeof value !== "number" && typeof value !== "string") return "-";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return "-";
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}
