/** Drop files (or pick them) to upload into the current folder; progress and cancel per file. */
import { useState } from "preact/hooks";
import { describe } from "../api.ts";
import { html } from "../html.ts";
import { Upload } from "../upload.ts";
import { formatBytes } from "../widgets.ts";

interface Item {
  id: number;
  name: string;
  sent: number;
  total: number;
  state: "uploading" | "done" | "failed" | "cancelled";
  error?: string;
  upload: Upload;
}

let nextId = 1;

export function UploadPanel(
  { bucket, prefix, onUploaded }: { bucket: string; prefix: string; onUploaded: () => void },
) {
  const [items, setItems] = useState<Item[]>([]);
  const [over, setOver] = useState(false);
  const update = (id: number, patch: Partial<Item>) =>
    setItems((list) => list.map((i) => (i.id === id ? { ...i, ...patch } : i)));

  const start = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      const id = nextId++;
      const upload = new Upload(
        file,
        bucket,
        prefix + file.name,
        (p) => update(id, { sent: p.sent }),
      );
      setItems((list) => [
        ...list,
        { id, name: file.name, sent: 0, total: file.size, state: "uploading", upload },
      ]);
      upload.start().then(
        () => {
          update(id, { state: "done", sent: file.size });
          onUploaded();
        },
        (err) =>
          update(id, {
            state: (err as { code?: string }).code === "cancelled" ? "cancelled" : "failed",
            error: describe(err),
          }),
      );
    }
  };

  return html`
    <div
      class=${over ? "dropzone over" : "dropzone"}
      onDragOver=${(e: DragEvent) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave=${() => setOver(false)}
      onDrop=${(e: DragEvent) => {
        e.preventDefault();
        setOver(false);
        if (e.dataTransfer?.files.length) start(e.dataTransfer.files);
      }}
    >
        <label class="button">Upload files
          <input type="file" multiple class="visually-hidden" name="upload"
            onChange=${(e: Event) => {
              const input = e.target as HTMLInputElement;
              if (input.files) start(input.files);
              input.value = "";
            }} />
        </label>
        <span class="muted">or drop files here (large files go up in parts)</span>
        ${items.length > 0
          ? html`<ul class="uploads">
          ${
            items.map((i) =>
              html`<li data-upload=${i.name} data-state=${i.state}>
              <span>${i.name}</span>
              <progress max=${i.total || 1} value=${i.sent}></progress>
              <small>${formatBytes(i.sent)} / ${formatBytes(i.total)} · ${i.state}</small>
              ${
                i.state === "uploading"
                  ? html`<button class="ghost" onClick=${() => i.upload.cancel()}>Cancel</button>`
                  : html`
                    <button class="ghost" aria-label=${`Dismiss ${i.name}`}
                      onClick=${() => setItems((l) => l.filter((x) => x.id !== i.id))}>✕</button>
                  `
              }
              ${i.error ? html`<span class="error">${i.error}</span>` : null}
            </li>`
            )
          }
        </ul>`
          : null}
      </div>
  `;
}
