/** Admission blocks (the `admission` config section) and the trace tester: which rule decides a request. */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Section, useAction, useLoad, valueOf } from "../widgets.ts";

export function AdmissionPage() {
  const section = useLoad(() => call<Record<string, unknown>>("config/section/admission"));
  const action = useAction();
  const [input, setInput] = useState<Record<string, string>>({
    method: "GET",
    path: "/",
    source_ip: "",
  });
  const [authenticated, setAuthenticated] = useState(false);
  const [trace, setTrace] = useState<unknown>(null);
  const set = (name: string) => (e: Event) => setInput({ ...input, [name]: valueOf(e) });
  const run = (event: Event) => {
    event.preventDefault();
    const body: Record<string, unknown> = { authenticated };
    for (const [k, v] of Object.entries(input)) if (v) body[k] = v;
    action.run(() => call("config/trace", { body }), (r) => {
      setTrace(r);
    });
  };
  return html`
    <div>
      <${Section} title="Admission blocks">
        <${ErrorText} error=${section.error} />
        <pre class="code">${section.data ? JSON.stringify(section.data, null, 2) : "Loading…"}</pre>
        <p class="muted">Edit them on the Config page (section "admission").</p>
        <//>
        <${Section} title="Trace tester">
          <form class="stack" onSubmit=${run}>
            <label>Method <input value=${input.method} onInput=${set("method")} /></label>
            <label>Path <input value=${input.path} onInput=${set(
              "path",
            )} placeholder="/bucket/key" /></label>
            <label>Query <input value=${input.query ?? ""} onInput=${set(
              "query",
            )} placeholder="list-type=2" /></label>
            <label>Source IP <input value=${input.source_ip} onInput=${set(
              "source_ip",
            )} placeholder="203.0.113.9" /></label>
            <label class="check"><input type="checkbox" checked=${authenticated}
              onChange=${() => setAuthenticated(!authenticated)} /> Signed request</label>
            <button type="submit" class="primary" disabled=${action.busy}>Trace</button>
          </form>
          <${ErrorText} error=${action.error} />
          ${trace ? html`<pre class="code trace">${JSON.stringify(trace, null, 2)}</pre>` : null}
        <//>
      </div>
  `;
}
