/**
 * Secrets survive a round trip through the config API: what a client GETs or exports has its
 * secrets removed (see `SECRET_FIELDS` / `ENCRYPTION_SECRET_FIELDS` in export.ts), so before a
 * document it sends back is applied, every secret it does not name is put back from the
 * operator's current document at the same place. "GET, edit, PUT never clears a credential."
 *
 * The rules (`carrySecrets`):
 * - a secret field the incoming object omits, or sends as the redaction marker `""`, gets the
 *   previous value; an explicit `null` is kept (it clears the secret: a merge patch deletes the
 *   member, and `dropNullSecrets` removes it from a whole document);
 * - objects are matched by their key, list items by their `name` (named backends, IAM users and
 *   groups, auth providers, Slack routes); an unnamed or renamed item gets nothing (a secret is
 *   never guessed into a different entity);
 * - an object the incoming document lacks altogether is recreated holding only its secrets when
 *   the client could not have seen it (`shown`, the redacted export, lacks it too: the export
 *   omits an object left empty once defaults and secrets are gone, e.g. an `advanced` section
 *   holding only `bootstrap_password_hash`). An object the export did show and the client left
 *   out was removed on purpose, so nothing is recreated for it.
 */
import { isPlainObject as isObject } from "../../lib/mod.ts";
import { isSecretField } from "./export.ts";

/** What an export or GET leaves where a secret was: nothing, or (sent back by a client) `""`. */
export const REDACTION_MARKER = "";

/** A deep copy with every secret field omitted (for GET answers of the running config). */
export function redactSecrets(value: unknown, parentKey?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    if (isSecretField(key, parentKey)) continue;
    out[key] = redactSecrets(member, key);
  }
  return out;
}

/** The secrets of an object (nested objects included) and nothing else; undefined when none. */
function secretsOnly(value: Record<string, unknown>, parentKey: string | undefined) {
  let out: Record<string, unknown> | undefined;
  for (const [key, member] of Object.entries(value)) {
    let kept: unknown;
    if (isSecretField(key, parentKey)) kept = isCarried(member) ? member : undefined;
    else if (isObject(member)) kept = secretsOnly(member, key);
    if (kept !== undefined) (out ??= {})[key] = kept;
  }
  return out;
}

/** A previous value worth carrying (not absent, cleared or itself a marker). */
function isCarried(value: unknown): boolean {
  return value !== undefined && value !== null && value !== REDACTION_MARKER;
}

function namedItem(list: unknown, name: string): Record<string, unknown> | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.find((item) => isObject(item) && item.name === name) as
    | Record<string, unknown>
    | undefined;
}

function carry(incoming: unknown, previous: unknown, shown: unknown, parentKey?: string): unknown {
  if (Array.isArray(incoming) && Array.isArray(previous)) {
    return incoming.map((item) => {
      if (!isObject(item) || typeof item.name !== "string") return item;
      const before = namedItem(previous, item.name);
      return before === undefined ? item : carry(item, before, namedItem(shown, item.name));
    });
  }
  if (!isObject(incoming) || !isObject(previous)) return incoming;
  const out: Record<string, unknown> = { ...incoming };
  for (const [key, before] of Object.entries(previous)) {
    const now = incoming[key];
    if (isSecretField(key, parentKey)) {
      if ((now === undefined || now === REDACTION_MARKER) && isCarried(before)) out[key] = before;
    } else if (now === undefined) {
      const seen = isObject(shown) ? shown[key] : undefined;
      // An empty object showed the client nothing it could have chosen to remove.
      const wasShown = seen !== undefined && !(isObject(seen) && Object.keys(seen).length === 0);
      if (isObject(before) && !wasShown) {
        const skeleton = secretsOnly(before, key);
        if (skeleton !== undefined) out[key] = skeleton;
      }
    } else {
      out[key] = carry(now, before, isObject(shown) ? shown[key] : undefined, key);
    }
  }
  return out;
}

/**
 * `incoming` (a whole document, a section, or a merge patch of either) with the secrets of
 * `previous` (the operator's document at the same place) carried over per the rules above.
 * `shown` is the redacted export at the same place; absent, every absent object is recreated
 * when it held secrets. Inputs are not modified.
 */
export function carrySecrets(
  incoming: Record<string, unknown>,
  previous: Record<string, unknown>,
  shown?: Record<string, unknown>,
  parentKey?: string,
): Record<string, unknown> {
  return carry(incoming, previous, shown, parentKey) as Record<string, unknown>;
}

/** A copy without the secret fields set to `null` (explicitly cleared) anywhere. */
export function dropNullSecrets(value: unknown, parentKey?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => dropNullSecrets(item));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) {
    if (member === null && isSecretField(key, parentKey)) continue;
    out[key] = dropNullSecrets(member, key);
  }
  return out;
}
