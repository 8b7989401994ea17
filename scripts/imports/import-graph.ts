// Reads the static import graph of the TypeScript tree: every `import … from`, `export … from`,
// side-effect `import "…"` and literal `import("…")`, type-only imports included (a type cycle is
// still a cycle in the design). Only relative specifiers are followed; npm: and node: ones leave
// the tree.

export interface ImportEdge {
  from: string; // path relative to the root, "/" separated
  to: string;
  typeOnly: boolean;
  line: number;
}

// deno fmt puts every static import and re-export at the start of a line; one may run over
// several lines (a long name list) until its `from "…"`.
const statementStart = /^(import\s*(type\s*)?[\w{*"']|export\s*(type\s*)?[{*])/;
const fromClause = /\bfrom\s*["']([^"']+)["']/;
const bareForm = /^import\s*["']([^"']+)["']/;
const dynamicForm = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** The import edges of one file's text (its path relative to the root, "/" separated). */
export function importsOf(path: string, text: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  const lines = text.split("\n");
  const add = (specifier: string, typeOnly: boolean, line: number) => {
    if (!specifier.startsWith(".")) return;
    edges.push({ from: path, to: joinPath(dirOf(path), specifier), typeOnly, line });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const bare = bareForm.exec(line);
    if (bare) {
      add(bare[1], false, i + 1);
      continue;
    }
    if (statementStart.test(line)) {
      let j = i;
      let statement = line;
      while (!fromClause.test(statement) && !/;\s*$/.test(lines[j]) && j + 1 < lines.length) {
        statement += "\n" + lines[++j];
      }
      const from = fromClause.exec(statement);
      if (from) {
        add(from[1], /^(import|export)\s+type\b/.test(statement), i + 1);
        i = j;
        continue;
      }
    }
    for (const dynamic of line.matchAll(dynamicForm)) add(dynamic[1], false, i + 1);
  }
  return edges;
}

export function dirOf(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut < 0 ? "" : path.slice(0, cut);
}

/** Joins a relative specifier onto a directory, resolving "." and ".." segments. */
export function joinPath(dir: string, specifier: string): string {
  const parts = dir === "" ? [] : dir.split("/");
  for (const segment of specifier.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") parts.pop();
    else parts.push(segment);
  }
  return parts.join("/");
}

/** Every cycle's files, one strongly connected component of two or more files (or a self-import). */
export function cyclesOf(edges: ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const edge of edges) {
    if (!next.has(edge.from)) next.set(edge.from, new Set());
    next.get(edge.from)!.add(edge.to);
  }
  // Tarjan's algorithm, iterative so a deep chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const start of next.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; children: string[]; at: number }[] = [];
    const enter = (node: string) => {
      index.set(node, counter);
      low.set(node, counter++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, children: [...(next.get(node) ?? [])], at: 0 });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.at < frame.children.length) {
        const child = frame.children[frame.at++];
        if (!index.has(child)) enter(child);
        else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = next.get(frame.node)?.has(frame.node) ?? false;
        if (component.length > 1 || selfLoop) components.push(component.sort());
      }
    }
  }
  return components;
}
