/** Live tail of the server log (Server-Sent Events from /logs/stream) with level/target/text filters. */
import { useEffect, useState } from "preact/hooks";
import { ADMIN, queryString } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Section, valueOf } from "../widgets.ts";

const KEEP = 500;

interface Entry {
  id: number;
  time: string;
  level: string;
  target: string;
  message: string;
  fields: Record<string, unknown>;
}

export function LogsPage() {
  const [level, setLevel] = useState("");
  const [target, setTarget] = useState("");
  const [q, setQ] = useState("");
  const [filter, setFilter] = useState({ level: "", target: "", q: "" });
  const [entries, setEntries] = useState<Entry[]>([]);
  const [status, setStatus] = useState("connecting");
  const [error, setError] = useState<string | null>(null);
  const [paused, setPaused] = useState(false);
  useEffect(() => {
    if (paused) return;
    const url = `${ADMIN}/logs/stream${
      queryString({
        level: filter.level || undefined,
        target: filter.target || undefined,
        q: filter.q || undefined,
        after: "0",
      })
    }`;
    const source = new EventSource(url);
    setStatus("connecting");
    source.onopen = () => {
      setStatus("live");
      setError(null);
    };
    source.addEventListener("log", (event) => {
      const entry = JSON.parse((event as MessageEvent).data) as Entry;
      setEntries((list) => [entry, ...list.filter((e) => e.id !== entry.id)].slice(0, KEEP));
    });
    source.addEventListener("dropped", (event) => {
      setError(`The tail fell behind and skipped entries: ${(event as MessageEvent).data}`);
    });
    source.onerror = () => {
      setStatus("reconnecting");
      setError("The live tail lost its connection; retrying. If it persists, log in again.");
    };
    return () => source.close();
  }, [filter, paused]);
  return html`
    <${Section} title="Logs" actions=${html`
      <span class="status" data-status=${status}>${paused ? "paused" : status}</span>
      <button onClick=${() => setPaused(!paused)}>${paused ? "Resume" : "Pause"}</button>
      <button onClick=${() => setEntries([])}>Clear</button>
    `}>
      <form class="inline" onSubmit=${(e: Event) => {
        e.preventDefault();
        setEntries([]);
        setFilter({ level, target, q });
      }}>
        <label>Level <select name="level" value=${level} onChange=${(e: Event) =>
          setLevel(valueOf(e))}>
            <option value="">any</option>
            ${["trace", "debug", "info", "warn", "error"].map((l) =>
              html`<option value=${l}>${l}+</option>`
            )}
          </select></label>
        <label>Target <input name="target" placeholder="svc::s3" value=${target}
            onInput=${(e: Event) => setTarget(valueOf(e))} /></label>
        <label>Text <input name="q" value=${q} onInput=${(e: Event) => setQ(valueOf(e))} /></label>
        <button type="submit">Filter</button>
      </form>
      <${ErrorText} error=${error} />
      <ol class="log" aria-live="polite">
          ${entries.map((e) =>
            html`<li class=${`level-${e.level}`} key=${e.id}>
          <time>${e.time}</time> <b>${e.level}</b> <i>${e.target}</i> <span class="message">${e.message}</span>
          ${
              Object.keys(e.fields ?? {}).length
                ? html`
                  <small>${JSON.stringify(e.fields)}</small>
                `
                : null
            }
        </li>`
          )}
        </ol>
      <//>
  `;
}
