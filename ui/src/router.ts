/** History-API routing under `/_/`: the path after `/_/` picks the page. */
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<() => void>();

export function navigate(path: string, replace = false): void {
  if (path === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  for (const listener of listeners) listener();
}

globalThis.addEventListener?.("popstate", () => {
  for (const listener of listeners) listener();
});

/** The current path below `/_/`, split: `/_/browse/b/p/` → ["browse", "b", "p", ""]. */
export function useRoute(): { segments: string[]; search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  const rest = location.pathname.replace(/^\/_\/?/, "");
  return {
    segments: rest === "" ? [] : rest.split("/").map(decodeURIComponent),
    search: new URLSearchParams(location.search),
  };
}

/** An in-app link: a real `<a href>` (keyboard, middle-click) that routes without a reload. */
export function linkClick(event: MouseEvent): void {
  const anchor = event.currentTarget as HTMLAnchorElement;
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(anchor.getAttribute("href")!);
}
