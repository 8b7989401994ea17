/** The event outbox: rows by status, requeue one failed row or all of them. */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import {
  ErrorText,
  Notice,
  RowsTable,
  Section,
  showValue,
  useAction,
  useLoad,
  valueOf,
} from "../widgets.ts";

export function EventsPage() {
  const [status, setStatus] = useState("");
  const [offset, setOffset] = useState(0);
  const outbox = useLoad(
    () =>
      call<
        {
          rows: Record<string, unknown>[];
          counts: Record<string, number>;
          total: number;
          limit: number;
        }
      >(
        "event-outbox",
        { query: { status: status || undefined, offset, limit: 50 } },
      ),
    [status, offset],
  );
  const action = useAction();
  const data = outbox.data;
  return html`
    <${Section} title="Event outbox" actions=${html`
      <button onClick=${() =>
        action.run(
          () => call<{ requeued: number }>("event-outbox/requeue", { method: "POST" }),
          (r) => {
            outbox.reload();
            return `Requeued ${r.requeued} failed event(s).`;
          },
        )}>Requeue all failed</button>
      <button onClick=${outbox.reload}>Refresh</button>
    `}>
      <${ErrorText} error=${action.error ?? outbox.error} />
      <${Notice} text=${action.notice} />
      <label>Status <select value=${status} onChange=${(e: Event) => {
        setOffset(0);
        setStatus(valueOf(e));
      }}>
          <option value="">all</option>
          ${Object.keys(data?.counts ?? {}).map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label>
      <p class="muted">Counts: ${showValue(data?.counts ?? {})}</p>
      <${RowsTable} rows=${data?.rows ?? []} actions=${(row: Record<string, unknown>) =>
        row.status === "failed"
          ? html`<button onClick=${() =>
            action.run(() => call(`event-outbox/${row.id}/requeue`, { method: "POST" }), () => {
              outbox.reload();
              return `Event ${row.id} requeued.`;
            })}>Requeue</button>`
          : null} />
      <div class="inline">
        <button disabled=${offset === 0} onClick=${() =>
          setOffset(Math.max(0, offset - 50))}>Previous</button>
        <button disabled=${!data || offset + 50 >= data.total} onClick=${() =>
          setOffset(offset + 50)}>Next</button>
      </div>
      <//>
  `;
}
