/** Small shared pieces: loading data with its error, messages, formatting. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { describe } from "./api.ts";
import { html } from "./html.ts";
import { cellText } from "./format.ts";

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` now and whenever `deps` change; keeps its error as words. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error: string | null; loading: boolean }>({
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (err) => live && setState({ error: describe(err), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Runs an action, keeping busy/error/notice state for a form or a button. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const run = async <T>(action: () => Promise<T>, done?: (result: T) => string | void) => {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const result = await action();
      const text = done?.(result);
      if (text) setNotice(text);
      return result;
    } catch (err) {
      setError(describe(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, notice, run, setError, setNotice };
}

export function ErrorText({ error }: { error: string | null | undefined }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null;
}

export function Notice({ text }: { text: string | null | undefined }) {
  return text ? html`<p class="notice" role="status">${text}</p>` : null;
}

export function Section(
  { title, children, actions }: {
    title: string;
    children?: ComponentChildren;
    actions?: ComponentChildren;
  },
) {
  return html`<section class="card">
    <header class="card-head"><h2>${title}</h2><div class="actions">${actions}</div></header>
    ${children}
  </section>`;
}

/** Sizes and rates: one formatter for the whole console (format.ts). */
export { cellText, formatBytes, formatDuration, formatPercent, formatRate } from "./format.ts";

// One formatter for every cell: Date#toLocaleString builds a new one per call, which costs
// ~1 ms each and made a 500-row listing page take over half a second to render.
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function formatTime(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === "") return "–";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : DATE_TIME.format(date);
}

/** Shows any JSON value compactly (tables of rows whose shape the UI does not know). */
export function showValue(value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** A table of JSON rows whose shape the UI need not know (new fields show up by themselves). */
export function RowsTable(
  { rows, columns, actions }: {
    rows: Record<string, unknown>[];
    columns?: string[];
    actions?: (row: Record<string, unknown>) => unknown;
  },
) {
  if (rows.length === 0) return html`<p class="muted">Nothing here yet.</p>`;
  const keys = columns ?? Object.keys(rows[0]);
  return html`
    <div class="scroll">
      <table>
        <thead>
          <tr>${keys.map((k) => html`<th>${k}</th>`)}${actions ? html`<th></th>` : null}</tr>
        </thead>
        <tbody>${rows.map((row) =>
          html`<tr>${keys.map((k) => html`<td>${cellText(k, row[k])}</td>`)}${
            actions ? html`<td class="actions">${actions(row)}</td>` : null
          }</tr>`
        )}</tbody>
      </table>
    </div>
  `;
}

/** A value from an input event. */
export function valueOf(event: Event): string {
  return (event.target as HTMLInputElement).value;
}
