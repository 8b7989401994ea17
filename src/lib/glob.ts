/**
 * The key glob of `path_glob` and the filters built on it: `*` matches any run of characters
 * except `/`, `**` any run including `/`, `?` one character except `/`; everything else is
 * literal.
 */
export function globMatcher(glob: string): (key: string) => boolean {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      source += "[\\s\\S]*";
      i++;
    } else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  const pattern = new RegExp(`^${source}$`, "u");
  return (key) => pattern.test(key);
}
