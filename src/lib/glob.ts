// The two glob dialects of the config (docs/ARCHITECTURE.md, "Glob settings", lists which setting
// uses which):
//
// - `globMatcher`, the path dialect (admission `path_glob`, replication and lifecycle
//   `include_globs` / `exclude_globs`): `*` matches any run of characters except `/`, `**` any run
//   including `/`, `?` one character except `/`; everything else is literal.
// - `keyGlobMatcher`, the dialect of the reference implementation's settings that svc accepts as
//   they are (Slack `slack_include_globs` / `slack_exclude_globs` and route `prefix_globs`): the
//   glob is matched against the object key alone and `*` crosses `/`, as Rust's `globset` does by
//   default: `*` and `**` any run, `?` any one character, `[abc]` / `[!abc]` / `[a-z]` a class,
//   `{a,b}` alternatives; a leading `**/` also matches no folder at all (`**/*.tmp` matches
//   `x.tmp`).
export function globMatcher(glob: string): (key: string) => boolean {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      source += "[\\s\\S]*";
      i++;
    } else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else source += escapeRegExp(c);
  }
  const pattern = new RegExp(`^${source}$`, "u");
  return (key) => pattern.test(key);
}

/** The reference dialect (see the header); an unbalanced `[` or `{` is literal. */
export function keyGlobMatcher(glob: string): (key: string) => boolean {
  const pattern = new RegExp(`^${keyGlobSource(glob)}$`, "u");
  return (key) => pattern.test(key);
}

function keyGlobSource(glob: string): string {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      const start = i;
      while (glob[i + 1] === "*") i++;
      // `**` then `/`, at a folder boundary, may stand for no folder at all.
      const boundary = start === 0 || glob[start - 1] === "/";
      if (i > start && boundary && glob[i + 1] === "/") {
        source += "(?:[\\s\\S]*/)?";
        i++;
      } else source += "[\\s\\S]*";
    } else if (c === "?") source += "[\\s\\S]";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end < 0) source += "\\[";
      else {
        const body = glob.slice(i + 1, end);
        const negated = body.startsWith("!");
        const members = (negated ? body.slice(1) : body).replace(/[\\\]^]/g, "\\$&");
        source += `[${negated ? "^" : ""}${members}]`;
        i = end;
      }
    } else if (c === "{") {
      const end = glob.indexOf("}", i + 1);
      if (end < 0) source += "\\{";
      else {
        const choices = glob.slice(i + 1, end).split(",").map(keyGlobSource);
        source += `(?:${choices.join("|")})`;
        i = end;
      }
    } else source += escapeRegExp(c);
  }
  return source;
}

function escapeRegExp(c: string): string {
  return c.replace(/[.+^${}()|[\]\\/]/g, "\\$&");
}
