/**
 * One folder of a bucket: a page of 200 keys at a time (continuation tokens kept for Previous,
 * so 100,000 keys page without loading them all), folders first, storage kinds filled in after
 * the page shows, selection with bulk copy / move / delete / ZIP, the details pane and uploads.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { ADMIN, call, queryString } from "../api.ts";
import { html } from "../html.ts";
import { linkClick } from "../router.ts";
import { ErrorText, formatBytes, formatTime, Notice, useAction, useLoad } from "../widgets.ts";
import { browseHref } from "./browse.ts";
import { BulkBar } from "./bulk-bar.ts";
import { ObjectDetails } from "./object-details.ts";
import { UploadPanel } from "./upload-panel.ts";

export const PAGE_KEYS = 200;

export interface ObjectRow {
  key: string;
  size: number;
  last_modified: string | null;
}

interface ListPage {
  objects: ObjectRow[];
  prefixes: string[];
  truncated: boolean;
  next_continuation_token: string | null;
}

export function ObjectList({ bucket, prefix }: { bucket: string; prefix: string }) {
  // tokens[i] is the continuation token of page i (page 0 has none).
  const [tokens, setTokens] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<string | null>(null);
  const [kinds, setKinds] = useState<Record<string, string | null>>({});
  const action = useAction();
  const listing = useLoad(
    () =>
      call<ListPage>("objects/list", {
        query: {
          bucket,
          prefix,
          delimiter: "/",
          max_keys: PAGE_KEYS,
          continuation_token: tokens[page] ?? undefined,
        },
      }),
    [bucket, prefix, page],
  );
  const data = listing.data;

  // Storage kinds after the page is on screen, 100 keys a request, so the first paint never waits.
  useEffect(() => {
    if (!data) return;
    // For scripts/bench/ui-list.ts: when a listing page is in the DOM (navigation-relative).
    performance.mark("svc:listing-rendered");
    let live = true;
    const keys = data.objects.map((o) => o.key);
    (async () => {
      // Gathered, then set once: every set re-renders the whole page of rows.
      const found: Record<string, string | null> = {};
      for (let i = 0; i < keys.length && live; i += 100) {
        try {
          const r = await call<{ kinds: Record<string, string | null> }>("objects/storage-kinds", {
            body: { bucket, keys: keys.slice(i, i + 100) },
          });
          Object.assign(found, r.kinds);
        } catch {
          break; // the column stays "–"; the details pane shows the error if the user asks
        }
      }
      if (live) setKinds((k) => ({ ...k, ...found }));
    })();
    return () => {
      live = false;
    };
  }, [data]);

  const next = () => {
    if (!data?.next_continuation_token) return;
    const more = tokens.slice(0, page + 1);
    more.push(data.next_continuation_token);
    setTokens(more);
    setPage(page + 1);
  };
  const refresh = () => {
    setSelected(new Set());
    listing.reload();
  };
  const toggle = (key: string) => {
    const copy = new Set(selected);
    if (copy.has(key)) copy.delete(key);
    else copy.add(key);
    setSelected(copy);
  };
  const allOnPage = data?.objects.map((o) => o.key) ?? [];
  const allSelected = allOnPage.length > 0 && allOnPage.every((k) => selected.has(k));
  const rows = useMemo(() => data?.objects ?? [], [data]);

  return html`<div class="browser">
    <${UploadPanel} bucket=${bucket} prefix=${prefix} onUploaded=${refresh} />
    <div class="toolbar">
      <button onClick=${refresh}>Refresh</button>
      <a class="button" href=${`${ADMIN}/objects/zip${queryString({ bucket, prefix })}`}
        download>Folder as ZIP</a>
      <span class="spacer"></span>
      <span>Page ${page + 1}</span>
      <button disabled=${page === 0} onClick=${() => setPage(page - 1)}>Previous</button>
      <button disabled=${!data?.truncated} onClick=${next}>Next</button>
    </div>
    ${
    selected.size > 0
      ? html`
        <${BulkBar} bucket=${bucket} prefix=${prefix} keys=${[...selected]}
          onDone=${refresh} action=${action} />
      `
      : null
  }
    <${ErrorText} error=${action.error ?? listing.error} />
    <${Notice} text=${action.notice} />
    ${listing.loading && !data ? html`<p class="loading">Loading…</p>` : null}
    <div class="split">
      <table class="objects">
        <thead><tr>
          <th><input type="checkbox" aria-label="Select all on this page" checked=${allSelected}
            onChange=${() => setSelected(allSelected ? new Set() : new Set(allOnPage))} /></th>
          <th>Name</th><th class="num">Size</th><th>Storage</th><th>Modified</th>
        </tr></thead>
        <tbody>
          ${
    (data?.prefixes ?? []).map((p) =>
      html`
        <tr class="folder">
          <td></td>
          <td colspan="4"><a href=${browseHref(bucket, p)} onClick=${linkClick}>
                        ${p.slice(prefix.length)}</a></td>
        </tr>
      `
    )
  }
          ${
    rows.map((o) =>
      html`
        <tr key=${o.key} class=${open === o.key ? "open" : ""} data-key=${o.key}>
          <td><input type="checkbox" aria-label=${`Select ${o.key}`}
                        checked=${selected.has(o.key)} onChange=${() => toggle(o.key)} /></td>
          <td><button class="link" onClick=${() => setOpen(o.key)}>
                        ${o.key.slice(prefix.length)}</button></td>
          <td class="num">${formatBytes(o.size)}</td>
          <td class="kind">${kinds[o.key] ?? "–"}</td>
          <td>${formatTime(o.last_modified)}</td>
        </tr>
      `
    )
  }
        </tbody>
      </table>
      ${
    open
      ? html`<${ObjectDetails} bucket=${bucket} objectKey=${open} onClose=${() => setOpen(null)} />`
      : null
  }
    </div>
    ${
    data && data.objects.length === 0 && data.prefixes.length === 0
      ? html`<p>This folder is empty. Drop files above to upload.</p>`
      : null
  }
  </div>`;
}
