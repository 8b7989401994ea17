/**
 * A client edits what GET showed it: the RUNNING config (defaults filled in, `${env:…}`
 * placeholders expanded, `SVC_*` environment overrides applied), but the change is written into
 * the OPERATOR'S document (the config file). A value the client sends back exactly as it was
 * shown is an echo, not an edit, and must not turn into a file change:
 *
 * - in a merge patch (`mode: "patch"`), an echoed value keeps the document's version: a default
 *   stays absent, a placeholder stays a placeholder, a value an environment variable overrides
 *   is not written into the file (and the file's own value is kept);
 * - in a whole document (`mode: "document"`: `POST /config/apply`, typically a file the operator
 *   wrote), only placeholders are restored: a value equal to the running value of a field the
 *   file holds as `${env:…}` goes back to the placeholder, so an exported secret-free document
 *   applied again does not pin the expanded value. Everything else is taken as written.
 *
 * List items are matched by `name`; `null` (a merge-patch deletion) is left alone.
 */
import { deepEqual, isPlainObject as isObject } from "../../lib/mod.ts";

const PLACEHOLDER = /\$\{env:[A-Za-z_][A-Za-z0-9_]*\}/;

export type EchoMode = "patch" | "document";

function named(list: unknown, name: string): unknown {
  return Array.isArray(list)
    ? list.find((item) => isObject(item) && item.name === name)
    : undefined;
}

/** `incoming` with echoes replaced by the document's version; undefined means "leave out". */
function echo(incoming: unknown, running: unknown, document: unknown, mode: EchoMode): unknown {
  if (incoming === null) return null;
  if (deepEqual(incoming, running)) {
    if (mode === "patch") return document;
    if (typeof document === "string" && PLACEHOLDER.test(document)) return document;
  }
  if (isObject(incoming) && isObject(running)) {
    const doc = isObject(document) ? document : undefined;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(incoming)) {
      const kept = echo(value, running[key], doc?.[key], mode);
      if (kept !== undefined) out[key] = kept;
    }
    // Every member was an echo of an object the file does not hold (e.g. a section whose only
    // unshown member is a secret): nothing to write, rather than an empty object.
    if (Object.keys(out).length === 0 && doc === undefined && Object.keys(incoming).length > 0) {
      return undefined;
    }
    return out;
  }
  if (Array.isArray(incoming) && Array.isArray(running)) {
    // The list replaces the document's whole: an item is never dropped, only its fields echo.
    return incoming.map((item) => {
      if (!isObject(item) || typeof item.name !== "string") return item;
      const before = named(running, item.name);
      const docItem = named(document, item.name);
      // Nothing to restore from the file: the item is taken as sent.
      if (before === undefined || docItem === undefined) return item;
      return echo(item, before, docItem, mode) ?? item;
    });
  }
  return incoming;
}

/**
 * `incoming` (a merge patch or a whole document, at the same place as `running` and `document`)
 * with echoes of the running config turned back into the document's version. Inputs are not
 * modified.
 */
export function keepOperatorValues(
  incoming: Record<string, unknown>,
  running: unknown,
  document: unknown,
  mode: EchoMode,
): Record<string, unknown> {
  const kept = echo(incoming, running, document, mode);
  return isObject(kept) ? kept : {};
}
