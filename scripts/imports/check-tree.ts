// The structure rules of the tree, as one function over a root folder so a test can plant
// violations in a temporary tree:
// - no import cycle among the files of src/ and main.ts, type-only imports included;
// - every production file lives in a room (a folder under src/) named in the layer table, and
//   imports only its own room and the rooms the table allows;
// - production code never imports tests, *_test.ts files or the testing room;
// - another room is entered through its mod.ts only (what a room exports is one file's list);
// - production files stay readable (at most 400 lines) and folders stay small (at most 25 files
//   at one level).

import { cyclesOf, type ImportEdge, importsOf } from "./import-graph.ts";
import { sourceFiles } from "./source-files.ts";

export interface LayerRules {
  layers: Record<string, readonly string[]>;
  entryImports: readonly string[];
  testingRoom: string;
  sharedOutsideSrc: readonly string[];
  maxFileLines: number;
  maxFilesPerFolder: number;
  /** Whether another room must be entered through its mod.ts. */
  modEntry: boolean;
}

export interface TreeReport {
  violations: string[];
  files: number;
  edges: number;
}

const ENTRY = "main.ts";

export function roomOf(path: string): string | undefined {
  const parts = path.split("/");
  return parts[0] === "src" && parts.length > 2 ? parts[1] : undefined;
}

export function isTestFile(path: string): boolean {
  return path.endsWith("_test.ts") || path.startsWith("tests/") || path.startsWith("scripts/");
}

export async function checkTree(root: string, rules: LayerRules): Promise<TreeReport> {
  const violations: string[] = [];
  const all = await sourceFiles(root);
  const graphFiles = all.filter((file) => file === ENTRY || file.startsWith("src/"));
  const edges: ImportEdge[] = [];
  for (const file of graphFiles) {
    edges.push(...importsOf(file, await Deno.readTextFile(`${root}/${file}`)));
  }
  const present = new Set(all);

  for (const cycle of cyclesOf(edges)) {
    violations.push(`import cycle of ${cycle.length} files: ${cycle.join(" -> ")}`);
  }
  violations.push(...tableProblems(rules.layers));

  const isProduction = (file: string) =>
    (file === ENTRY || file.startsWith("src/")) && !isTestFile(file) &&
    roomOf(file) !== rules.testingRoom;
  for (const edge of edges) {
    if (!isProduction(edge.from)) continue;
    const where = `${edge.from}:${edge.line}`;
    if (!present.has(edge.to)) {
      violations.push(`${where}: imports ${edge.to}, which is not in the tree`);
      continue;
    }
    if (isTestFile(edge.to) || roomOf(edge.to) === rules.testingRoom) {
      violations.push(`${where}: production code imports test support ${edge.to}`);
      continue;
    }
    if (!edge.to.startsWith("src/")) {
      if (!rules.sharedOutsideSrc.includes(edge.to)) {
        violations.push(`${where}: imports ${edge.to}, outside src/`);
      }
      continue;
    }
    const to = roomOf(edge.to)!;
    const from = roomOf(edge.from);
    if (edge.from === ENTRY) {
      if (!rules.entryImports.includes(to)) {
        violations.push(`${where}: main.ts may not import room "${to}"`);
      }
    } else if (from === undefined || !(from in rules.layers)) {
      violations.push(`${edge.from}: not in a room of the layer table`);
      continue;
    } else if (from !== to && !rules.layers[from].includes(to)) {
      violations.push(`${where}: room "${from}" may not import room "${to}" (${edge.to})`);
      continue;
    }
    if (rules.modEntry && from !== to && edge.to !== `src/${to}/mod.ts`) {
      violations.push(`${where}: enters room "${to}" past its mod.ts (${edge.to})`);
    }
  }

  for (const file of all) {
    if (!isProduction(file)) continue;
    if (roomOf(file) === undefined && file !== ENTRY) {
      violations.push(`${file}: not in a room of the layer table`);
    }
    if (file.endsWith(".generated.ts")) continue;
    const lines = (await Deno.readTextFile(`${root}/${file}`)).split("\n").length - 1;
    if (lines > rules.maxFileLines) {
      violations.push(`${file}: ${lines} lines (at most ${rules.maxFileLines})`);
    }
  }
  const perFolder = new Map<string, number>();
  for (const file of all) {
    if (!file.startsWith("src/")) continue;
    const folder = file.slice(0, file.lastIndexOf("/"));
    perFolder.set(folder, (perFolder.get(folder) ?? 0) + 1);
  }
  for (const [folder, count] of perFolder) {
    if (count > rules.maxFilesPerFolder) {
      violations.push(
        `${folder}/: ${count} files at one level (at most ${rules.maxFilesPerFolder})`,
      );
    }
  }
  return { violations, files: graphFiles.length, edges: edges.length };
}

/** Rooms the table names but does not define, and cycles in the table itself. */
export function tableProblems(layers: Record<string, readonly string[]>): string[] {
  const problems: string[] = [];
  for (const [room, allowed] of Object.entries(layers)) {
    for (const target of allowed) {
      if (!(target in layers)) {
        problems.push(`layer table: "${room}" names unknown room "${target}"`);
      }
    }
  }
  const asEdges = Object.entries(layers).flatMap(([room, allowed]) =>
    allowed.map((target) => ({ from: room, to: target, typeOnly: false, line: 0 }))
  );
  for (const cycle of cyclesOf(asEdges)) {
    problems.push(`layer table: rooms in a cycle: ${cycle.join(", ")}`);
  }
  return problems;
}
