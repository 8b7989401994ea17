// The file names docs/ARCHITECTURE.md cites (`storage/fs/fs-walk.ts`, `fs-walk.ts`) must name
// files that exist, so the document cannot keep describing a file after it moved or went away.
// A cited path that lost its file is repaired to the one file of the same name, where there is
// exactly one.

const cited = /`((?:[\w.-]+\/)*[\w.-]+\.ts)`/g;

export interface DocPathReport {
  /** Citations that resolve to no file and cannot be repaired. */
  missing: string[];
  /** The document with every repairable citation pointing at the file's current path. */
  repaired: string;
}

export function checkDocPaths(document: string, files: string[]): DocPathReport {
  const missing = new Set<string>();
  const repaired = document.replace(cited, (whole, path: string) => {
    if (resolves(path, files)) return whole;
    const name = path.slice(path.lastIndexOf("/") + 1);
    const folders = path.split("/").slice(0, -1);
    const named = files.filter((file) => file.split("/").at(-1) === name);
    const near = named.filter((file) =>
      folders.every((folder) => file.split("/").includes(folder))
    );
    const candidates = near.length > 0 ? near : named;
    if (candidates.length === 1 && path.includes("/")) {
      const full = candidates[0];
      return `\`${path.startsWith("src/") ? full : full.replace(/^src\//, "")}\``;
    }
    missing.add(path);
    return whole;
  });
  return { missing: [...missing].sort(), repaired };
}

/** A citation names a file when some file's path ends with it (src/ and other roots implied). */
function resolves(path: string, files: string[]): boolean {
  return files.some((file) => file === path || file.endsWith(`/${path}`));
}
