// Repairs relative imports after files were moved: every relative specifier that no longer
// resolves is pointed at the one file in the tree with the same name. Moving a room is then
// `git mv` plus this script; it is also how a merge of two branches that moved different files is
// made whole. File names are unique in the tree (the import check keeps them so), which is what
// makes the name a safe key.
//
//   deno run -A scripts/imports/fix-imports.ts [--dry-run]

import { dirOf, joinPath } from "./import-graph.ts";
import { sourceFiles } from "./source-files.ts";

const specifierForms = [
  /(\bfrom\s*)(["'])(\.{1,2}\/[^"']+)\2/g,
  /(^import\s*)(["'])(\.{1,2}\/[^"']+)\2/gm,
  /(\bimport\(\s*)(["'])(\.{1,2}\/[^"']+)\2/g,
  /(\bnew URL\(\s*)(["'])(\.{1,2}\/[^"']+)\2/g,
];

/** The relative specifier that leads from a file to a target, both relative to the root. */
export function relativeSpecifier(fromFile: string, target: string): string {
  const from = dirOf(fromFile).split("/").filter(Boolean);
  const to = target.split("/");
  let common = 0;
  while (common < from.length && common < to.length - 1 && from[common] === to[common]) common++;
  const ups = from.length - common;
  const rest = to.slice(common).join("/");
  return ups === 0 ? `./${rest}` : `${"../".repeat(ups)}${rest}`;
}

/**
 * The candidates that share the most trailing path segments with the lost target: a file named
 * like a test helper (`tests/helpers/config-db.ts`) is not taken for `src/db/config-db.ts`.
 */
export function closestByPath(target: string, candidates: string[]): string[] {
  const wanted = target.split("/").reverse();
  const shared = (candidate: string) => {
    const segments = candidate.split("/").reverse();
    let n = 0;
    while (n < segments.length && n < wanted.length && segments[n] === wanted[n]) n++;
    return n;
  };
  const best = Math.max(0, ...candidates.map(shared));
  return candidates.filter((candidate) => shared(candidate) === best);
}

/** A file that moved stays under the top folder it was in (src/, tests/, ui/, scripts/). */
function sameArea(target: string, candidates: string[]): string[] {
  const area = target.split("/")[0];
  return candidates.filter((candidate) => candidate.split("/")[0] === area);
}

if (import.meta.main) {
  const dryRun = Deno.args.includes("--dry-run");
  const files = await sourceFiles(".");
  const present = new Set(files);
  const byName = new Map<string, string[]>();
  for (const file of files) {
    const name = file.slice(file.lastIndexOf("/") + 1);
    byName.set(name, [...(byName.get(name) ?? []), file]);
  }
  let changedFiles = 0;
  const unresolved: string[] = [];
  // The import tools' own files hold import statements inside strings (their test trees).
  for (const file of files.filter((file) => !file.startsWith("scripts/imports/"))) {
    const text = await Deno.readTextFile(file);
    let next = text;
    for (const form of specifierForms) {
      next = next.replace(form, (whole, lead: string, quote: string, specifier: string) => {
        const target = joinPath(dirOf(file), specifier);
        if (present.has(target) || !/\.(ts|tsx|js|json)$/.test(target)) return whole;
        const name = target.slice(target.lastIndexOf("/") + 1);
        const candidates = closestByPath(target, sameArea(target, byName.get(name) ?? []));
        if (candidates.length !== 1) {
          unresolved.push(`${file}: "${specifier}" (${candidates.length} files named ${name})`);
          return whole;
        }
        return `${lead}${quote}${relativeSpecifier(file, candidates[0])}${quote}`;
      });
    }
    if (next !== text) {
      changedFiles++;
      if (!dryRun) await Deno.writeTextFile(file, next);
    }
  }
  console.log(`${changedFiles} file(s) ${dryRun ? "would change" : "changed"}`);
  for (const line of unresolved) console.log(`unresolved: ${line}`);
  if (unresolved.length > 0) Deno.exit(1);
}
