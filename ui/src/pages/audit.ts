/** The audit trail (newest first). */
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, RowsTable, Section, useLoad } from "../widgets.ts";

export function AuditPage() {
  const audit = useLoad(() =>
    call<{ entries: Record<string, unknown>[] }>("audit", { query: { limit: 500 } })
  );
  return html`
    <${Section} title="Audit" actions=${html`<button onClick=${audit.reload}>Refresh</button>`}>
      <${ErrorText} error=${audit.error} />
      <${RowsTable} rows=${audit.data?.entries ?? []} />
      <//>
  `;
}
