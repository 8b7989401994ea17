// The reference of every `SVC_*` environment variable svc reads: docs/ENVIRONMENT.md, generated
// from the code so the two cannot drift apart.
//
//   deno run -A scripts/env-reference.ts --write   regenerate docs/ENVIRONMENT.md
//   deno run -A scripts/env-reference.ts --check   exit 1 when the file is stale, a variable the
//                                                   code reads has no note, or a note names a
//                                                   variable the code no longer reads
//
// Which variables are read comes from the code itself: every `SVC_…` name in the production
// sources (comments left out), plus the per-backend names `applyEnvironment` asks for when the
// document has a named backend. Config keys come from `ENV_BINDINGS`, defaults from the config a
// document without settings builds to, and "live" from `RESTART_ONLY` (src/runtime/apply.ts).
// What the code cannot say (meanings, the keys and defaults of variables read outside the
// config) lives in scripts/env-reference-notes.ts.

import { applyEnvironment, ENV_BINDINGS } from "../src/config/env.ts";
import { buildConfig } from "../src/config/mod.ts";
import { RESTART_ONLY } from "../src/runtime/apply.ts";
import { ENV_NOTES, type EnvNote } from "./env-reference-notes.ts";

export const REFERENCE_PATH = "docs/ENVIRONMENT.md";
const BACKEND_PROBE = "probe";
const MiB = 1024 * 1024;
const NAME_PATTERN = /\bSVC_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_$*<{])/g;

/** The text of a TypeScript file without its comments (strings kept as they are). */
export function stripComments(source: string): string {
  let out = "";
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      while (i < source.length && source[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      i = end === -1 ? source.length : end + 2;
    } else if (c === '"' || c === "'" || c === "`") {
      // A string up to its unescaped closing quote; a nested template inside `${}` is rare
      // enough in this tree to ignore.
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === "\\" ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

async function productionFiles(root: string): Promise<string[]> {
  const files = ["main.ts"];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(`${root}/${dir}`)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && path !== "src/testing") await walk(path);
      else if (entry.isFile && entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
        files.push(path);
      }
    }
  };
  await walk("src");
  return files.sort();
}

/** Per-backend variables, `SVC_BACKEND_<NAME>_…`: the names the overlay asks a backend for. */
export function backendTemplates(): string[] {
  const asked = new Set<string>();
  const env = new Proxy({}, {
    get: (_target, name) => {
      if (typeof name === "string") asked.add(name);
      return undefined;
    },
  }) as Record<string, string | undefined>;
  applyEnvironment({ storage: { backends: [{ name: BACKEND_PROBE, type: "filesystem" }] } }, env);
  const prefix = `SVC_BACKEND_${BACKEND_PROBE.toUpperCase()}_`;
  return [...asked].filter((name) => name.startsWith(prefix))
    .map((name) => `SVC_BACKEND_<NAME>_${name.slice(prefix.length)}`);
}

/** Every variable the production code reads, sorted. */
export async function variablesRead(root: string): Promise<string[]> {
  const names = new Set<string>(backendTemplates());
  for (const file of await productionFiles(root)) {
    const code = stripComments(await Deno.readTextFile(`${root}/${file}`));
    for (const match of code.matchAll(NAME_PATTERN)) names.add(match[0]);
  }
  for (const { name } of ENV_BINDINGS) names.add(name);
  return [...names].sort();
}

export interface EnvRow {
  name: string;
  key: string;
  default: string;
  live: string;
  meaning: string;
}

function formatDefault(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return `\`${value}\``;
  // Byte sizes read better with their MiB or GiB alongside.
  if (typeof value === "number" && value >= MiB && value % MiB === 0) {
    return value % (1024 * MiB) === 0
      ? `${value} (${value / (1024 * MiB)} GiB)`
      : `${value} (${value / MiB} MiB)`;
  }
  return String(value);
}

function valueAt(root: unknown, path: string[]): unknown {
  let node = root;
  for (const part of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** The rows of the reference and the problems found building them. */
export function referenceRows(
  read: string[],
  notes: Record<string, EnvNote> = ENV_NOTES,
): { rows: EnvRow[]; problems: string[] } {
  const defaults = buildConfig({}, { env: {} }).config;
  const problems: string[] = [];
  const rows: EnvRow[] = [];
  for (const name of read) {
    const note = notes[name];
    if (note === undefined) {
      problems.push(
        `${name} is read by the code but has no note in scripts/env-reference-notes.ts`,
      );
      continue;
    }
    const binding = ENV_BINDINGS.find((b) => b.name === name);
    const key = binding?.path.join(".") ?? note.key;
    const restart = key !== undefined &&
      RESTART_ONLY.some((prefix) => key === prefix || key.startsWith(`${prefix}.`));
    const fallback = binding ? formatDefault(valueAt(defaults, binding.path)) : undefined;
    const live = note.live ?? (binding ? (restart ? "restart" : "yes") : undefined);
    const value = note.default ?? fallback;
    if (value === undefined) problems.push(`${name}: no default (give one in its note)`);
    if (live === undefined) problems.push(`${name}: not a config binding; its note needs "live"`);
    rows.push({
      name,
      key: binding ? `\`${key}\`` : note.key ?? "–",
      default: value ?? "?",
      live: live ?? "?",
      meaning: note.meaning,
    });
  }
  for (const name of Object.keys(notes)) {
    if (!read.includes(name)) {
      problems.push(`${name} has a note but the code does not read it (remove the note)`);
    }
  }
  return { rows, problems };
}

function table(rows: EnvRow[]): string {
  const head = ["Variable", "Config key", "Default", "Live", "Meaning"];
  const cells = rows.map((r) => [`\`${r.name}\``, r.key, r.default, r.live, r.meaning]);
  const line = (cols: string[]) => `| ${cols.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...cells.map(line)].join("\n");
}

/** The whole text of docs/ENVIRONMENT.md, before deno fmt aligns its table. */
export function renderReference(rows: EnvRow[]): string {
  return `# Environment variables

<!-- Generated by scripts/env-reference.ts from the code: do not edit by hand. Run
     deno run -A scripts/env-reference.ts --write after changing a variable. -->

Every \`SVC_*\` variable svc reads. A variable with a config key sets that key of the
configuration document and wins over the file (\`svc config lint\` ignores these overrides). The
environment of a running process does not change, and it is applied again on top of every reload,
so a set variable holds its setting for the life of the process.

- **Default**: the value when neither the variable nor the file sets it.
- **Live**: for a config key, whether a change of that key (file + \`SIGHUP\`, or the admin API)
  takes effect without a restart (\`yes\`) or at the next start (\`restart\`), from
  \`RESTART_ONLY\` in src/runtime/apply.ts. \`start only\`: svc reads the variable once at start.
  \`per use\`: read from the process environment each time it is used.
- \`SVC_BACKEND_<NAME>_…\`: \`<NAME>\` is a named backend's name in upper case, \`-\` and \`.\` as \`_\`.

\`RUST_LOG\` (not listed: not an \`SVC_\` name) is the log filter too and wins over \`SVC_LOG_LEVEL\`.

${table(rows)}
`;
}

/** Everything wrong with the reference file `text` (empty: it is current). */
export function referenceProblems(read: string[], text: string | null): string[] {
  const { rows, problems } = referenceRows(read);
  if (text === null) problems.push(`${REFERENCE_PATH} does not exist`);
  else if (normalize(text) !== normalize(renderReference(rows))) {
    problems.push(
      `${REFERENCE_PATH} is stale (run: deno run -A scripts/env-reference.ts --write)`,
    );
  }
  return problems;
}

/**
 * Whitespace-insensitive form, so deno fmt's table alignment and paragraph wrapping do not count
 * as a difference.
 */
function normalize(text: string): string {
  return text.split("\n").map((line) =>
    line.trim().startsWith("|")
      ? line.split("|").map((cell) => cell.trim().replace(/^-+$/, "-")).join("|")
      : line
  ).join("\n").replace(/\s+/g, " ").trim();
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const read = await variablesRead(root);
  const path = `${root}/${REFERENCE_PATH}`;
  if (Deno.args.includes("--write")) {
    const { rows, problems } = referenceRows(read);
    for (const problem of problems) console.log(problem);
    await Deno.writeTextFile(path, renderReference(rows));
    // Formatted as `deno fmt` of the whole tree would, so the gate finds nothing to change.
    await new Deno.Command(Deno.execPath(), { args: ["fmt", "--quiet", path] }).output();
    console.log(`${REFERENCE_PATH}: ${rows.length} variables written`);
    if (problems.length > 0) Deno.exit(1);
  } else if (Deno.args.includes("--check")) {
    const text = await Deno.readTextFile(path).catch(() => null);
    const problems = referenceProblems(read, text);
    for (const problem of problems) console.log(problem);
    console.log(`env-reference: ${read.length} variables, ${problems.length} problem(s)`);
    if (problems.length > 0) Deno.exit(1);
  } else {
    console.log("usage: deno run -A scripts/env-reference.ts --write | --check");
    Deno.exit(2);
  }
}
