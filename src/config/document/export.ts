/**
 * Canonical YAML export of a validated configuration (`GET /config/export`, `svc config`):
 *
 * - every field equal to its schema default is omitted, deeply; an object left empty by that is
 *   omitted too (unless it is an entry of a map such as `storage.buckets`, whose key alone is
 *   meaningful, an item of a list, or a field the schema does not describe), and so is a section
 *   left empty;
 * - secrets are stripped, meaning OMITTED (not blanked): see `SECRET_FIELDS` and
 *   `ENCRYPTION_SECRET_FIELDS`. Re-applying an export therefore never sets a secret to "" and the
 *   key sources the spec recommends (environment variables) keep working;
 * - a bucket policy whose `public_prefixes` is exactly `[""]` and that does not say `public: false`
 *   collapses back to `public: true`.
 *
 * The walk is generic over the valibot schema (objects, optionals with defaults, arrays, records,
 * unions, lazies, pipes), so fields added to the schema are handled without changes here. A field
 * without a declared default that a transform derives (e.g. `max_total_multipart_bytes`) is
 * omitted when re-validating without it reproduces its value. Fields
 * are written in schema order, so exporting is deterministic and a fixed point:
 * `export(validate(parse(export(c)))) === export(c)`.
 */
import { deepEqual, isPlainObject } from "../../lib/mod.ts";
import { stringify } from "yaml";
import * as v from "valibot";
import { type Config, ConfigError, configSchema } from "../schema/schema.ts";

/** Field names that are secrets wherever they appear. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  "secret_access_key",
  "kms_key_id",
  "legacy_key",
  "bootstrap_password_hash",
  "client_secret",
  "slack_bot_token",
  "webhook_secret",
  // Webhook headers usually carry a bearer token or an API key: the whole map is a secret.
  "webhook_headers",
]);

/** Field names that are secrets inside an encryption block only (`key` is too generic). */
export const ENCRYPTION_SECRET_FIELDS: ReadonlySet<string> = new Set(["key"]);
const ENCRYPTION_BLOCKS: ReadonlySet<string> = new Set(["encryption", "backend_encryption"]);

export interface ExportOptions {
  /** Export only this top-level section (still wrapped under its name); unknown names throw. */
  section?: string;
  /** Keep secrets (for backups and internal round trips); false by default. */
  includeSecrets?: boolean;
}

/** Any valibot schema, seen through the properties the walk reads. */
interface SchemaNode {
  type: string;
  entries?: Record<string, SchemaNode>;
  rest?: SchemaNode;
  wrapped?: SchemaNode;
  item?: SchemaNode;
  value?: SchemaNode;
  options?: SchemaNode[];
  getter?: (input: unknown) => SchemaNode;
  default?: unknown;
}

const OPTIONAL_TYPES = new Set([
  "optional",
  "exact_optional",
  "nullish",
  "nullable",
  "undefinedable",
  "non_optional",
  "non_nullable",
  "non_nullish",
]);
const OBJECT_TYPES = new Set(["object", "loose_object", "strict_object", "object_with_rest"]);

/** Section names of the document, in schema order. */
export function configSections(): string[] {
  return Object.keys((configSchema as unknown as SchemaNode).entries ?? {});
}

/** The schema of one section (unwrapped from its optional); unknown names throw ConfigError. */
export function sectionSchema(section: string): v.GenericSchema {
  const entries = (configSchema as unknown as SchemaNode).entries ?? {};
  if (!Object.hasOwn(entries, section)) {
    throw new ConfigError(
      `unknown config section "${section}" (expected one of ${configSections().join(", ")})`,
    );
  }
  return entries[section] as unknown as v.GenericSchema;
}

/** The default a field would get when absent, or `undefined` when it has none. */
function defaultOf(schema: SchemaNode | undefined): unknown {
  let node = schema;
  while (node && OPTIONAL_TYPES.has(node.type)) {
    if (node.default !== undefined) {
      return typeof node.default === "function" ? (node.default as () => unknown)() : node.default;
    }
    node = node.wrapped;
  }
  return undefined;
}

/** Whether the field may be left out of a document. */
function isOptional(schema: SchemaNode): boolean {
  return ["optional", "exact_optional", "nullish", "undefinedable"].includes(schema.type);
}

/** Peels optionals and lazies; for unions, the first object-shaped option accepting `value`. */
function resolve(schema: SchemaNode | undefined, value: unknown): SchemaNode | undefined {
  let node = schema;
  for (let guard = 0; node && guard < 32; guard++) {
    if (OPTIONAL_TYPES.has(node.type) && node.wrapped) node = node.wrapped;
    else if (node.type === "lazy" && node.getter) node = node.getter(value);
    else if ((node.type === "union" || node.type === "variant") && node.options) {
      node = node.options.find((option) =>
        v.safeParse(option as unknown as v.GenericSchema, value).success
      );
    } else return node;
  }
  return node;
}

/** Whether `key` names a secret where it sits (`parentKey`: the key of the object holding it). */
export function isSecretField(key: string, parentKey: string | undefined): boolean {
  if (SECRET_FIELDS.has(key)) return true;
  return parentKey !== undefined && ENCRYPTION_BLOCKS.has(parentKey) &&
    ENCRYPTION_SECRET_FIELDS.has(key);
}

/** `public_prefixes: [""]` (and no `public: false`) becomes `public: true`. */
function collapsePublic(policy: Record<string, unknown>): Record<string, unknown> {
  const prefixes = policy.public_prefixes;
  const wholeBucket = Array.isArray(prefixes) && prefixes.length === 1 && prefixes[0] === "";
  if (!wholeBucket || policy.public === false) return policy;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(policy)) {
    if (key === "public_prefixes") out.public = true;
    else if (key !== "public") out[key] = value;
  }
  return out;
}

interface Walk {
  includeSecrets: boolean;
  /** Dotted path of the node being walked ("" for the document). */
  path: string;
  /** The key this node sits under in its parent object, if any. */
  key?: string;
}

/**
 * `value` with defaults and secrets removed, as the schema describes it; `undefined` when nothing
 * is left worth writing.
 */
function prune(schema: SchemaNode | undefined, value: unknown, walk: Walk): unknown {
  if (value === undefined) return undefined;
  const node = resolve(schema, value);
  if (Array.isArray(value)) {
    const item = node?.type === "array" ? node.item : undefined;
    return value.map((element, i) =>
      prune(item, element, { ...walk, path: `${walk.path}[${i}]`, key: undefined }) ?? {}
    );
  }
  if (!isPlainObject(value)) return value;
  const isBuckets = walk.path === "storage.buckets";
  if (node?.type === "record" || (isBuckets && node === undefined)) {
    const out: Record<string, unknown> = {};
    for (const [name, entry] of Object.entries(value)) {
      const policy = isBuckets && isPlainObject(entry) ? collapsePublic(entry) : entry;
      const path = `${walk.path}.${name}`;
      const pruned = prune(node?.value, policy, { ...walk, path, key: name });
      if (pruned !== undefined) out[name] = pruned;
      else if (policy !== undefined) out[name] = isPlainObject(policy) ? {} : policy;
    }
    return out;
  }
  const entries = node && OBJECT_TYPES.has(node.type) ? node.entries ?? {} : {};
  const rest = node?.rest;
  const out: Record<string, unknown> = {};
  const keys = [
    ...Object.keys(entries).filter((k) => Object.hasOwn(value, k)),
    ...Object.keys(value).filter((k) => !Object.hasOwn(entries, k)),
  ];
  for (const key of keys) {
    const field = value[key];
    if (field === undefined) continue;
    if (!walk.includeSecrets && isSecretField(key, walk.key)) continue;
    const fieldSchema = entries[key] ?? rest;
    const fallback = defaultOf(fieldSchema);
    if (fallback !== undefined && deepEqual(field, fallback)) continue;
    const path = walk.path ? `${walk.path}.${key}` : key;
    const pruned = prune(fieldSchema, field, { ...walk, path, key });
    if (pruned === undefined) continue;
    const empty = isPlainObject(pruned) && Object.keys(pruned).length === 0;
    if (empty && fieldSchema !== undefined && isOptional(fieldSchema)) {
      continue;
    }
    out[key] = pruned;
  }
  return node ? dropDerived(node, entries, value, out) : out;
}

/**
 * Fields a transform of the object computes when they are absent (for example a cap derived from
 * two other fields): dropped when re-validating the export without them gives the same value.
 */
function dropDerived(
  node: SchemaNode,
  entries: Record<string, SchemaNode>,
  value: Record<string, unknown>,
  out: Record<string, unknown>,
): Record<string, unknown> {
  const pipe = (node as { pipe?: { kind?: string }[] }).pipe;
  if (!pipe?.some((item) => item.kind === "transformation")) return out;
  for (const key of Object.keys(out)) {
    const field = entries[key];
    if (!field || !isOptional(field) || defaultOf(field) !== undefined) continue;
    const { [key]: _omitted, ...without } = out;
    const reparsed = v.safeParse(node as unknown as v.GenericSchema, without);
    if (!reparsed.success || !isPlainObject(reparsed.output)) continue;
    if (deepEqual(reparsed.output[key], value[key])) delete out[key];
  }
  return out;
}

/** The canonical document as plain data (what `exportConfig` serialises). */
export function exportDocument(
  config: Config,
  options: ExportOptions = {},
): Record<string, unknown> {
  const walk: Walk = { includeSecrets: options.includeSecrets ?? false, path: "" };
  const document = prune(configSchema as unknown as SchemaNode, config, walk) as Record<
    string,
    unknown
  >;
  if (options.section === undefined) return document ?? {};
  sectionSchema(options.section);
  const section = document?.[options.section];
  return section === undefined ? {} : { [options.section]: section };
}

/** Canonical YAML of the configuration (or of one section); `{}` when everything is default. */
export function exportConfig(config: Config, options: ExportOptions = {}): string {
  return stringify(exportDocument(config, options), { lineWidth: 0 });
}
