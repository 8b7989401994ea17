/**
 * The config as YAML: edit, validate (a dry run), see the diff against what is running, apply;
 * the answer lists what was applied live and what needs a restart.
 */
import { useEffect, useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { lineDiff } from "../diff.ts";
import { ErrorText, Notice, Section, showValue, useAction, useLoad } from "../widgets.ts";

interface Outcome {
  applied?: string[];
  requires_restart?: string[];
  warnings?: unknown[];
  persisted?: boolean;
}

export function ConfigPage() {
  const running = useLoad(() => call<string>("config/export"));
  const [text, setText] = useState("");
  const [outcome, setOutcome] = useState<{ what: string; result: Outcome } | null>(null);
  const [showDiff, setShowDiff] = useState(false);
  const action = useAction();
  useEffect(() => {
    if (running.data !== undefined) setText(running.data);
  }, [running.data]);
  const send = (what: "validate" | "apply") =>
    action.run(() => call<Outcome>(`config/${what}`, { body: { yaml: text } }), (result) => {
      setOutcome({ what, result });
      if (what === "apply") running.reload();
      return what === "apply" ? "Config applied." : "The document is valid.";
    });
  const diff = running.data !== undefined ? lineDiff(running.data, text) : [];
  const changed = diff.some((d) => d.op !== " ");
  return html`<${Section} title="Config (YAML)" actions=${html`
    <button onClick=${() => send("validate")} disabled=${action.busy}>Validate</button>
    <button onClick=${() => setShowDiff(!showDiff)} aria-pressed=${showDiff}>
      ${showDiff ? "Hide diff" : "Diff"}</button>
    <button class="primary" onClick=${() => send("apply")} disabled=${action.busy ||
      !changed}>Apply</button>
    <button onClick=${() => running.data !== undefined && setText(running.data)}>Revert</button>
    <button title="Pull users, groups and sessions from the config sync bucket now" onClick=${() =>
      action.run(
        () => call<{ outcome: string; bucket: string }>("config/sync-now", { method: "POST" }),
        (r) => `Config sync with bucket ${r.bucket}: ${r.outcome}.`,
      )}
      disabled=${action.busy}>Sync now</button>
  `}>
    <${ErrorText} error=${action.error ?? running.error} />
    <${Notice} text=${action.notice} />
    ${
    outcome
      ? html`<dl class="meta outcome">
          <dt>Applied live</dt><dd class="applied">${showValue(outcome.result.applied ?? [])}</dd>
          <dt>Requires restart</dt><dd class="requires-restart">${
        showValue(outcome.result.requires_restart ?? [])
      }</dd>
          ${
        outcome.result.warnings?.length
          ? html`
            <dt>Warnings</dt>
            <dd>${showValue(outcome.result.warnings)}</dd>
          `
          : null
      }
        </dl>`
      : null
  }
    ${
    showDiff
      ? html`<pre class="diff" aria-label="Changes against the running config">${
        changed
          ? diff.filter((d) => d.op !== " ").map((d) =>
            html`<span class=${d.op === "+" ? "add" : "del"}>${d.op} ${d.line}\n</span>`
          )
          : "No changes."
      }</pre>`
      : null
  }
    <textarea class="yaml" name="config_yaml" spellcheck=${false} aria-label="Config YAML"
      value=${text} onInput=${(e: Event) =>
    setText((e.target as HTMLTextAreaElement).value)}></textarea>
  <//>`;
}
