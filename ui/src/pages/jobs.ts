/**
 * Jobs: the unified rows of GET /jobs, whatever their kind. Each row's `actions` names what it
 * supports, and the buttons come from that list, so a new kind of job needs no UI change.
 */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, RowsTable, Section, useAction, useLoad } from "../widgets.ts";

type Row = Record<string, unknown> & { id: string; actions?: string[] };

export function JobsPage() {
  const jobs = useLoad(() => call<{ jobs: Row[] }>("jobs"));
  const action = useAction();
  const [open, setOpen] = useState<string | null>(null);
  const rows = jobs.data?.jobs ?? [];
  return html`
    <div>
      <${Section} title="Jobs" actions=${html`<button onClick=${jobs.reload}>Refresh</button>`}>
          <${ErrorText} error=${action.error ?? jobs.error} />
          <${Notice} text=${action.notice} />
          <${RowsTable}
            rows=${rows}
            columns=${["id", "kind", "type", "scope", "status", "progress", "error", "created_at"]}
            actions=${(row: Row) =>
              html`
                <button onClick=${() => setOpen(open === row.id ? null : row.id)}>Runs</button>
                ${(row.actions ?? []).map((name) =>
                  html`<button onClick=${() =>
                    action.run(
                      () => call(`jobs/${encodeURIComponent(row.id)}/${name}`, { method: "POST" }),
                      () => {
                        jobs.reload();
                        return `Job ${row.id}: ${name} requested.`;
                      },
                    )}>${name}</button>`
                )}
              `}
          />
        <//>
        ${open ? html`<${JobRuns} id=${open} />` : null}
      </div>
  `;
}

function JobRuns({ id }: { id: string }) {
  const runs = useLoad(
    () => call<{ runs: Record<string, unknown>[] }>(`jobs/${encodeURIComponent(id)}/runs`),
    [id],
  );
  const failures = useLoad(
    () => call<{ failures: Record<string, unknown>[] }>(`jobs/${encodeURIComponent(id)}/failures`),
    [id],
  );
  return html`
    <${Section} title=${`Job ${id}`}>
      <${ErrorText} error=${runs.error ?? failures.error} />
      <h3>Runs</h3>
      <${RowsTable} rows=${runs.data?.runs ?? []} />
      <h3>Failures</h3>
      <${RowsTable} rows=${failures.data?.failures ?? []} />
      <//>
  `;
}
