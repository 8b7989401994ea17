/**
 * Jobs: the unified rows of GET /jobs, whatever their kind, each with its progress bar (percent,
 * done of total, rate, ETA: job-progress-bar.ts). Each row's `actions` names what it supports,
 * and the buttons come from that list, so a new kind of job needs no UI change. While a job is
 * queued or running the list reloads every 2 s. In a fleet a maintenance job another instance
 * runs shows its holder and heartbeat and offers only Cancel (job-fleet.ts); run histories name
 * the instance of each run.
 */
import { useEffect, useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import {
  ErrorText,
  formatTime,
  Notice,
  RowsTable,
  Section,
  useAction,
  useLoad,
} from "../widgets.ts";
import { JobProgressBar, type JobProgressFields } from "./job-progress-bar.ts";
import { countersText } from "../format.ts";
import { heldBy, heldByText, rowActions, runColumns } from "./job-fleet.ts";

type Row = Record<string, unknown> & {
  id: string;
  kind: string;
  type: string;
  status: string;
  scope?: { bucket?: string; prefix?: string; target?: string };
  progress?: JobProgressFields;
  actions?: string[];
  error?: string | null;
  created_at?: string;
};

const POLL_MS = 2000;
const ACTIVE = new Set(["queued", "running", "cancelling"]);

function scopeText(scope: Row["scope"]): string {
  if (!scope) return "–";
  const where = `${scope.bucket ?? ""}${scope.prefix ? `/${scope.prefix}` : ""}`;
  return scope.target ? `${where} → ${scope.target}` : where;
}

/** In a fleet: which instance runs a remote job or holds the rule's run, and its last run. */
function fleetText(row: Row) {
  const leased = row.leased_by as { holder?: string } | null | undefined;
  const last = row.fleet_last_run as
    | { instance?: string; status?: string; finished_at?: string }
    | null
    | undefined;
  const held = heldBy(row);
  if (held) {
    return html`
      <br /><small class="muted fleet" data-held-by=${held.instance}>${heldByText(
        held,
        Date.now(),
      )}</small>
    `;
  }
  if (!leased && !last) return null;
  return html`
    <br /><small class="muted fleet"
      data-leased-by=${leased?.holder ?? ""}>${leased
        ? `running on ${leased.holder}`
        : ""}${leased && last ? " · " : ""}${last
        ? `last run ${last.status} on ${last.instance}, ${formatTime(last.finished_at)}`
        : ""}</small>
  `;
}

export function JobsPage() {
  const jobs = useLoad(() => call<{ jobs: Row[] }>("jobs"));
  const action = useAction();
  const [open, setOpen] = useState<string | null>(null);
  const rows = jobs.data?.jobs ?? [];
  const busy = rows.some((row) => ACTIVE.has(row.status) || row.running === true);
  useEffect(() => {
    if (!busy) return;
    const timer = setTimeout(jobs.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [jobs.data, busy]);
  return html`
    <div>
      <${Section} title="Jobs" actions=${html`<button onClick=${jobs.reload}>Refresh</button>`}>
          <${ErrorText} error=${action.error ?? jobs.error} />
          <${Notice} text=${action.notice} />
          ${rows.length === 0 ? html`<p class="muted">No jobs yet.</p>` : html`
            <div class="scroll">
              <table class="jobs">
                <thead>
                  <tr>
                    <th>Job</th>
                    <th>Scope</th>
                    <th>Status</th>
                    <th class="progress-col">Progress</th>
                    <th>Created</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>${rows.map((row) =>
                  html`
                    <tr data-job=${row.id}>
                      <td><strong>${row.id}</strong><br /><small class="muted">${row.kind} · ${row
                        .type}</small></td>
                      <td>${scopeText(row.scope)}</td>
                      <td class="status">${row.status}${row.paused ? " (paused)" : ""}${row.error
                        ? html`<br /><small class="error">${row.error}</small>`
                        : null}${fleetText(row)}</td>
                      <td>
                        <${JobProgressBar} progress=${row.progress} status=${row.running === true
                          ? "running"
                          : row.status} />
                      </td>
                      <td>${formatTime(row.created_at)}</td>
                      <td class="actions">
                        ${heldBy(row)
                          ? null
                          : html`<button onClick=${() =>
                            setOpen(open === row.id ? null : row.id)}>Runs</button>`}
                        ${rowActions(row).map((name) =>
                          html`<button onClick=${() =>
                            action.run(
                              () =>
                                call(`jobs/${encodeURIComponent(row.id)}/${name}`, {
                                  method: "POST",
                                }),
                              () => {
                                jobs.reload();
                                return `Job ${row.id}: ${name} requested.`;
                              },
                            )}>${name}</button>`
                        )}
                      </td>
                    </tr>
                  `
                )}</tbody>
              </table>
            </div>
          `}
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
      <${RowsTable} columns=${runColumns(runs.data?.runs ?? [])} rows=${(runs.data?.runs ?? [])
        .map((run) => ({
          ...run,
          counters: countersText(run.counters as Record<string, unknown>),
        }))} />
      <h3>Failures</h3>
      <${RowsTable} rows=${failures.data?.failures ?? []} />
      <//>
  `;
}
