// The TypeScript files of the tree that the import tools read: main.ts, src/, tests/, scripts/
// and ui/, never node_modules or data.

const skipped = new Set(["node_modules", "data", "coverage", ".git"]);

/** Paths relative to `root`, "/" separated, sorted. */
export async function sourceFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir === "" ? root : `${root}/${dir}`)) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory) {
        if (!skipped.has(entry.name) && (dir !== "" || isTopLevelSource(entry.name))) {
          await walk(path);
        }
      } else if (
        entry.isFile && /\.tsx?$/.test(entry.name) && (dir !== "" || entry.name === "main.ts")
      ) {
        files.push(path);
      }
    }
  };
  await walk("");
  return files.sort();
}

function isTopLevelSource(name: string): boolean {
  return name === "src" || name === "tests" || name === "scripts" || name === "ui";
}
