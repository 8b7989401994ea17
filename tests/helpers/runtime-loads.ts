/**
 * What svc loads at run time that `deno compile` cannot see from the static import graph, found
 * by reading the source (tests/compile_coverage_test.ts holds compile.sh to it). The rule, for
 * production files (src/ and main.ts, not *_test.ts), comments removed:
 *
 * - `new URL("<relative>", import.meta.url)`: a worker entry point (`new Worker(new URL(…))`) or a
 *   file read at run time; the target, resolved against the file, must be embedded.
 * - `import.meta.resolve("<relative>")`: the same.
 * - `import("<relative>")`: a dynamic import; its target must be embedded too, to not depend on
 *   how far deno compile follows dynamic imports.
 * - `import(<anything else>)`, `import.meta.dirname`, `import.meta.filename`: a load whose target
 *   the source does not name; reported as unresolvable, so it has to be rewritten to one of the
 *   forms above.
 *
 * `typeof import("…")` is a type and is ignored.
 */

export interface RuntimeLoad {
  /** The file holding the load, relative to the repository root. */
  file: string;
  line: number;
  /** The loaded path relative to the root; undefined when the source does not name it. */
  target?: string;
  /** The source text matched. */
  text: string;
}

const PATTERNS: { regex: RegExp; named: boolean }[] = [
  { regex: /new\s+URL\(\s*(["'`])([^"'`]+)\1\s*,\s*import\.meta\.url\s*\)/g, named: true },
  { regex: /import\.meta\.resolve\(\s*(["'`])([^"'`]+)\1\s*\)/g, named: true },
  { regex: /(?<!typeof\s+)(?<![\w$.])import\s*\(\s*(["'`])([^"'`$]+)\1\s*\)/g, named: true },
  {
    regex: /(?<!typeof\s+)(?<![\w$.])import\s*\(\s*(?!["'`][^"'`$]+["'`]\s*\))[^)]*\)/g,
    named: false,
  },
  { regex: /import\.meta\.(?:dirname|filename)\b/g, named: false },
];

/** Blanks comments, keeping line numbers and the text of strings holding `//` (a URL). */
function withoutComments(text: string): string {
  const blank = (match: string) => match.replace(/[^\n]/g, " ");
  return text.replace(/\/\*[\s\S]*?\*\//g, blank).replace(/(^|\s)\/\/.*$/gm, blank);
}

/** `file` is relative to the root, with forward slashes; `text` is its source. */
export function findRuntimeLoads(file: string, text: string): RuntimeLoad[] {
  const code = withoutComments(text);
  const loads: RuntimeLoad[] = [];
  const base = new URL(file, "file:///root/");
  for (const { regex, named } of PATTERNS) {
    for (const match of code.matchAll(regex)) {
      const line = code.slice(0, match.index).split("\n").length;
      const specifier = named ? match[2] : undefined;
      // A bare or remote specifier is a package: the import graph, not a file of ours.
      if (specifier !== undefined && !/^\.\.?\//.test(specifier)) continue;
      const target = specifier === undefined
        ? undefined
        : decodeURIComponent(new URL(specifier, base).pathname.slice("/root/".length));
      loads.push({ file, line, target, text: match[0] });
    }
  }
  return loads;
}

/**
 * The paths compile.sh embeds: every `--include <path>` and every entry of its `includes=( … )`
 * array, relative to the root.
 */
export function compileIncludes(script: string): string[] {
  const paths = [...script.matchAll(/--include[ =]+([^\s"$\\]+)/g)].map((m) => m[1]);
  const array = /^includes=\(([\s\S]*?)^\)/m.exec(script);
  if (array) {
    for (const entry of array[1].split("\n")) {
      const path = entry.replace(/#.*/, "").trim().replace(/^"(.*)"$/, "$1");
      if (path !== "") paths.push(path);
    }
  }
  return paths.map((path) => path.replace(/^\.\//, "").replace(/\/$/, ""));
}

/** Whether `target` is one of `includes` or inside an included directory. */
export function isIncluded(target: string, includes: string[]): boolean {
  return includes.some((path) => target === path || target.startsWith(`${path}/`));
}
