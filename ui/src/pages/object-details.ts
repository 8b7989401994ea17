/** One object: metadata, storage kind, a preview of text or images, download. */
import { useEffect, useState } from "preact/hooks";
import { ADMIN, call, describe, failure, queryString } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, formatBytes, formatTime, useLoad } from "../widgets.ts";

const PREVIEW_LIMIT = 512 * 1024;
const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|toml))/;
const TEXT_EXTENSIONS = /\.(txt|md|json|ya?ml|xml|csv|log|ini|toml|conf|js|ts|py|sh|html?|css)$/i;

interface Head {
  size: number;
  content_type: string | null;
  etag: string | null;
  last_modified: string | null;
  storage_kind: string | null;
  version_id: string | null;
  metadata: Record<string, string>;
}

export function ObjectDetails(
  { bucket, objectKey, onClose }: { bucket: string; objectKey: string; onClose: () => void },
) {
  const head = useLoad(
    () => call<Head>("objects/head", { query: { bucket, key: objectKey } }),
    [bucket, objectKey],
  );
  const href = `${ADMIN}/objects/download${queryString({ bucket, key: objectKey })}`;
  return html`<aside class="details card" aria-label="Object details">
    <header class="card-head">
      <h2>${objectKey.split("/").pop()}</h2>
      <div class="actions"><button class="ghost" onClick=${onClose}>Close</button></div>
    </header>
    <${ErrorText} error=${head.error} />
    ${
    head.data
      ? html`
        <dl class="meta">
                  <dt>Key</dt><dd>${objectKey}</dd>
                  <dt>Size</dt><dd>${formatBytes(head.data.size)} (${head.data.size} bytes)</dd>
                  <dt>Storage</dt><dd class="storage-kind">${head.data.storage_kind ??
                    "unknown"}</dd>
                  <dt>Type</dt><dd>${head.data.content_type ?? "–"}</dd>
                  <dt>ETag</dt><dd>${head.data.etag ?? "–"}</dd>
                  <dt>Modified</dt><dd>${formatTime(head.data.last_modified)}</dd>
                  ${head.data.version_id
                    ? html`
                      <dt>Version</dt>
                      <dd>${head.data.version_id}</dd>
                    `
                    : null}
                  ${Object.entries(head.data.metadata).map(([k, v]) =>
                    html`
                      <dt>${k}</dt>
                      <dd>${v}</dd>
                    `
                  )}
                </dl>
        <p><a class="button primary" href=${href} download>Download</a></p>
        <${Preview} href=${href} head=${head.data} objectKey=${objectKey} />
      `
      : null
  }
  </aside>`;
}

function Preview({ href, head, objectKey }: { href: string; head: Head; objectKey: string }) {
  const type = head.content_type ?? "";
  const isImage = type.startsWith("image/") && type !== "image/svg+xml";
  const isText = TEXT_TYPES.test(type) || TEXT_EXTENSIONS.test(objectKey);
  const [text, setText] = useState<string | null>(null);
  const [image, setImage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if ((!isImage && !isText) || head.size > PREVIEW_LIMIT) return;
    let url: string | null = null;
    let live = true;
    (async () => {
      try {
        const response = await fetch(href, { credentials: "same-origin" });
        if (!response.ok) throw await failure(response);
        if (isImage) {
          url = URL.createObjectURL(await response.blob());
          if (live) setImage(url);
        } else if (live) setText(await response.text());
      } catch (err) {
        if (live) setError(describe(err));
      }
    })();
    return () => {
      live = false;
      if (url) URL.revokeObjectURL(url);
    };
  }, [href]);
  if (!isImage && !isText) return html`<p class="muted">No preview for this type.</p>`;
  if (head.size > PREVIEW_LIMIT) {
    return html`<p class="muted">Too large to preview (over ${formatBytes(PREVIEW_LIMIT)}).</p>`;
  }
  return html`<div class="preview">
    <${ErrorText} error=${error} />
    ${text !== null ? html`<pre class="text-preview" tabindex="0">${text}</pre>` : null}
    ${image ? html`<img src=${image} alt=${`Preview of ${objectKey}`} />` : null}
  </div>`;
}
