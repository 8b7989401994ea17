// Writes each room's mod.ts from what the other rooms import of it, and points those imports at
// it. Run after moving code between rooms: a name another room starts to use gets exported, a
// name no other room uses any more leaves the room's surface. Tests, the testing room and
// scripts keep importing files directly (they may reach inside a room).
//
//   deno run -A scripts/imports/make-mods.ts [--dry-run]

import { dirOf, joinPath } from "./import-graph.ts";
import { isTestFile, roomOf } from "./check-tree.ts";
import { relativeSpecifier } from "./fix-imports.ts";
import { sourceFiles } from "./source-files.ts";
import { TESTING_ROOM } from "./layers.ts";

interface Statement {
  start: number; // first line index
  end: number; // last line index
  kind: "import" | "export";
  typeOnly: boolean;
  names: { name: string; alias?: string; typeOnly: boolean }[];
  target: string;
}

const fromClause = /\bfrom\s*["']([^"']+)["'];?\s*$/;

/**
 * The `import {…} from` and `export {…} from` statements of a file that name another room, whether
 * they enter it past its mod.ts (rewritten) or through it already (counted, so a second run writes
 * the same surfaces).
 */
function crossRoomStatements(file: string, lines: string[], problems: string[]): Statement[] {
  const statements: Statement[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^(import|export)\b/.test(lines[i])) continue;
    let j = i;
    while (!fromClause.test(lines[j]) && !/;\s*$/.test(lines[j]) && j + 1 < lines.length) j++;
    const text = lines.slice(i, j + 1).join("\n");
    const from = fromClause.exec(text);
    if (!from || !from[1].startsWith(".")) {
      i = j;
      continue;
    }
    const target = joinPath(dirOf(file), from[1]);
    const room = roomOf(target);
    if (!room || room === roomOf(file)) {
      i = j;
      continue;
    }
    const clause = /^(import|export)\s+(type\s+)?\{([\s\S]*)\}\s*from/.exec(text);
    if (!clause) {
      problems.push(`${file}:${i + 1}: cannot route through mod.ts: ${text.split("\n")[0]}`);
      i = j;
      continue;
    }
    const typeOnly = clause[2] !== undefined;
    const names = clause[3].split(",").map((part) => part.trim()).filter(Boolean).map((part) => {
      const typed = /^type\s+/.test(part);
      const [name, alias] = part.replace(/^type\s+/, "").split(/\s+as\s+/);
      return { name, alias, typeOnly: typeOnly || typed };
    });
    statements.push({
      start: i,
      end: j,
      kind: clause[1] as "import" | "export",
      typeOnly,
      names,
      target,
    });
    i = j;
  }
  return statements;
}

/** Whether `name` is declared as a type (interface or type alias) by the file's text. */
function declaresType(text: string, name: string): boolean {
  const escaped = name.replace(/\$/g, "\\$");
  return new RegExp(`^export\\s+(declare\\s+)?(interface|type)\\s+${escaped}\\b`, "m").test(text) ||
    new RegExp(`^export\\s+type\\s+\\{[^}]*\\b${escaped}\\b[^}]*\\}`, "m").test(text) ||
    new RegExp(`^export\\s+\\{[^}]*\\btype\\s+${escaped}\\b[^}]*\\}`, "m").test(text);
}

/** The file that really declares `name`, following `export { name } from "./x.ts"` inside the room. */
async function declaringFile(file: string, name: string, depth = 0): Promise<string> {
  if (depth > 8) return file;
  const text = await Deno.readTextFile(file);
  const escaped = name.replace(/\$/g, "\\$");
  const reexport = new RegExp(
    `^export\\s+(type\\s+)?\\{[^}]*\\b${escaped}\\b[^}]*\\}\\s*from\\s*["'](\\.[^"']+)["']`,
    "m",
  ).exec(text);
  if (!reexport || new RegExp(`\\bas\\s+${escaped}\\b`).test(reexport[0])) return file;
  const next = joinPath(dirOf(file), reexport[2]);
  // Only within the room: another room's name is that room's to export.
  if (roomOf(next) !== roomOf(file)) return file;
  return declaringFile(next, name, depth + 1);
}

/** The one production file of a room that declares `name` as an export. */
async function declarationInRoom(
  files: string[],
  room: string,
  name: string,
): Promise<string | undefined> {
  const escaped = name.replace(/\$/g, "\\$");
  const declaration = new RegExp(
    `^export\\s+(declare\\s+)?(async\\s+)?(function\\*?|const|let|class|interface|type|enum|abstract\\s+class)\\s+${escaped}\\b`,
    "m",
  );
  const found: string[] = [];
  for (const file of files) {
    if (roomOf(file) !== room || isTestFile(file) || file.endsWith("/mod.ts")) continue;
    if (declaration.test(await Deno.readTextFile(file))) found.push(file);
  }
  return found.length === 1 ? found[0] : undefined;
}

function renderNames(names: Statement["names"], allTypes: boolean): string {
  return names.map((n) =>
    `${!allTypes && n.typeOnly ? "type " : ""}${n.name}${n.alias ? ` as ${n.alias}` : ""}`
  ).join(", ");
}

if (import.meta.main) {
  const dryRun = Deno.args.includes("--dry-run");
  const files = await sourceFiles(".");
  const production = files.filter((file) =>
    (file === "main.ts" || file.startsWith("src/")) && !isTestFile(file) &&
    roomOf(file) !== TESTING_ROOM && !file.endsWith("/mod.ts")
  );
  const problems: string[] = [];
  // room → exported name → the file that declares it
  const surfaces = new Map<string, Map<string, string>>();
  const rewrites = new Map<string, string[]>();
  for (const file of production) {
    const lines = (await Deno.readTextFile(file)).split("\n");
    const statements = crossRoomStatements(file, lines, problems);
    if (statements.length === 0) continue;
    const byRoom = new Map<string, Statement[]>();
    for (const statement of statements) {
      const room = roomOf(statement.target)!;
      const surface = surfaces.get(room) ?? new Map<string, string>();
      surfaces.set(room, surface);
      for (const { name } of statement.names) {
        let declared = await declaringFile(statement.target, name);
        if (declared === `src/${room}/mod.ts`) {
          // A name the room's surface does not list yet (imported through mod.ts ahead of it).
          declared = await declarationInRoom(files, room, name) ?? declared;
          if (declared === `src/${room}/mod.ts`) {
            problems.push(`room "${room}" declares no export "${name}" (${file})`);
            continue;
          }
        }
        const owner = surface.get(name);
        if (owner && owner !== declared) {
          problems.push(`room "${room}" exports "${name}" from both ${owner} and ${declared}`);
        }
        surface.set(name, declared);
      }
      const key = `${statement.kind}:${room}`;
      byRoom.set(key, [...(byRoom.get(key) ?? []), statement]);
    }
    const replaced = new Map<number, string | null>();
    for (const [key, group] of byRoom) {
      const [kind, room] = key.split(":");
      const names = group.flatMap((s) => s.names);
      const allTypes = names.every((n) => n.typeOnly);
      const specifier = relativeSpecifier(file, `src/${room}/mod.ts`);
      const merged = `${kind} ${allTypes ? "type " : ""}{ ${
        renderNames(names, allTypes)
      } } from "${specifier}";`;
      group.forEach((statement, index) => {
        for (let line = statement.start; line <= statement.end; line++) replaced.set(line, null);
        if (index === 0) replaced.set(statement.start, merged);
      });
    }
    const next: string[] = [];
    lines.forEach((line, index) => {
      if (!replaced.has(index)) next.push(line);
      else if (replaced.get(index) !== null) next.push(replaced.get(index)!);
    });
    rewrites.set(file, next);
  }

  for (const [room, surface] of [...surfaces].sort()) {
    const byFile = new Map<string, { values: string[]; types: string[] }>();
    for (const [name, owner] of surface) {
      const text = await Deno.readTextFile(owner);
      const entry = byFile.get(owner) ?? { values: [], types: [] };
      (declaresType(text, name) ? entry.types : entry.values).push(name);
      byFile.set(owner, entry);
    }
    const lines = [
      `// The ${room} room's surface: everything another room may use of it. Generated from what`,
      "// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every",
      "// entry into the room going through this file.",
      "",
    ];
    for (const [owner, { values, types }] of [...byFile].sort()) {
      const specifier = relativeSpecifier(`src/${room}/mod.ts`, owner);
      if (values.length) lines.push(`export { ${values.sort().join(", ")} } from "${specifier}";`);
      if (types.length) {
        lines.push(`export type { ${types.sort().join(", ")} } from "${specifier}";`);
      }
    }
    if (!dryRun) await Deno.writeTextFile(`src/${room}/mod.ts`, lines.join("\n") + "\n");
  }
  if (!dryRun) {
    for (const [file, lines] of rewrites) await Deno.writeTextFile(file, lines.join("\n"));
  }
  console.log(`${surfaces.size} mod.ts file(s), ${rewrites.size} importer(s) rewritten`);
  for (const problem of problems) console.log(`problem: ${problem}`);
  if (problems.length > 0) Deno.exit(1);
}
