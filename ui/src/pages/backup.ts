/** Backup export (a ZIP, optionally password-protected) and import. */
import { useState } from "preact/hooks";
import { ADMIN, failure } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, Section, showValue, useAction, valueOf } from "../widgets.ts";

const PASSWORD_HEADER = "x-svc-backup-password";

export function BackupPage() {
  const action = useAction();
  const [password, setPassword] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [result, setResult] = useState<unknown>(null);
  const headers = (): Record<string, string> => (password ? { [PASSWORD_HEADER]: password } : {});
  const exportBackup = () =>
    action.run(async () => {
      const response = await fetch(`${ADMIN}/backup`, {
        headers: headers(),
        credentials: "same-origin",
      });
      if (!response.ok) throw await failure(response);
      const name =
        /filename="([^"]+)"/.exec(response.headers.get("content-disposition") ?? "")?.[1] ??
          "svc-backup.zip";
      const url = URL.createObjectURL(await response.blob());
      const link = document.createElement("a");
      link.href = url;
      link.download = name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      return name;
    }, (name) => `Downloaded ${name}.`);
  const importBackup = (event: Event) => {
    event.preventDefault();
    if (!file) return;
    action.run(async () => {
      const response = await fetch(`${ADMIN}/backup`, {
        method: "POST",
        body: file,
        headers: {
          ...headers(),
          "content-type": file.name.endsWith(".json") ? "application/json" : "application/zip",
        },
        credentials: "same-origin",
      });
      if (!response.ok) throw await failure(response);
      return await response.json();
    }, (r) => {
      setResult(r);
      return "Backup imported.";
    });
  };
  return html`<${Section} title="Backup">
    <${ErrorText} error=${action.error} />
    <${Notice} text=${action.notice} />
    <label>Password (optional, 12+ characters) <input type="password" value=${password}
      onInput=${(e: Event) => setPassword(valueOf(e))} /></label>
    <p><button class="primary" onClick=${exportBackup} disabled=${action.busy}>Export backup</button></p>
    <form class="inline" onSubmit=${importBackup}>
      <label>Backup file <input type="file" accept=".zip,.json"
        onChange=${(e: Event) =>
    setFile((e.target as HTMLInputElement).files?.[0] ?? null)} /></label>
      <button type="submit" disabled=${!file || action.busy}>Import</button>
    </form>
    ${result ? html`<pre class="code">${showValue(result)}</pre>` : null}
  <//>`;
}
