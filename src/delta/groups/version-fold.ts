/**
 * Folding version tokens out of a key (the `auto` deltaspace policy, docs/DELTA.md): the versions
 * of one artifact map to one group key, whatever the layout, so they share one baseline.
 *
 *     releases/1.2.3/app.zip            -> releases/*\/app.zip
 *     com/acme/app/1.2.4/app-1.2.4.jar  -> com/acme/app/*\/app-*.jar
 *     builds/pkg-1.2.3.tgz              -> builds/pkg-*.tgz
 *     pool/main/p/pkg/pkg_1.2-3_amd64.deb -> pool/main/p/pkg/pkg_*_amd64.deb
 *
 * Each path segment is cut into tokens (runs of letters and digits; every other character
 * separates them and is kept). A version is a run of tokens joined by `.`, `-`, `_`, `+` or `~`
 * that starts with a version-like token and goes on over tokens that continue a version; the run
 * becomes one `*`:
 *
 * - starts a version: a number (`1`, `2024`, `20240501`, build numbers), `v` + digits (`v2`,
 *   `v1` of `v1.2.3`), a git-style hash (7 to 40 lowercase hex with a digit and a letter:
 *   `a1b2c3d`, a bundler's `app.3f9a2b1c.js`), digits-letters-digits (`8u392`, `1rc1`, `01T12`);
 * - continues one: the above, digits followed by up to three letters (`3a`, `00Z`), and release
 *   qualifiers with optional digits (`rc1`, `beta`, `SNAPSHOT`, `M3`, `post1`, `deb12u1`, …).
 *
 * Decisions (each in the table of version-fold_test.ts):
 * - The extension of the last segment is kept (`.jar`, `.7z`): it names the kind of artifact.
 * - Tokens that start with a letter are names, not versions: `python3`, `i18n`, `amd64`, `py3`,
 *   `cp311`, `libv8`, `go1` (of `go1.22.3`: the `22.3` after it folds), `el8`, `x64`.
 * - A standalone `v` + digits is a version (`api/v2/…` folds): such folders version artifacts far
 *   more often than they name the V8 engine.
 * - Digits after a separator that belong to a name are protected: `x86_64`, `x86-64`, `utf-8`,
 *   `iso-8859-1`, `manylinux_2_17`, `macosx_11_0`, conda's `linux-64`/`win-32`, `sha-256`.
 *   Platform and encoding tokens therefore stay in the key: the Linux and Windows builds of one
 *   version are separate groups (their bytes share little).
 * - Numbers that identify rather than version (`customers/1234/…`) fold too: such keys then
 *   share a baseline, which costs at worst an encode whose delta misses the ratio (the object is
 *   stored passthrough). Buckets laid out that way can use `deltaspace: parent` or a template.
 */

const TOKEN = /[A-Za-z0-9]+/g;
const JOINERS = new Set([".", "-", "_", "+", "~"]);

/** Spans whose digits are part of a name; never folded (case-insensitive). */
const PROTECTED = new RegExp(
  [
    "x86[-_]64",
    "utf[-_]?(?:8|16|32)(?:le|be)?",
    "ucs[-_]?[24]",
    "iso[-_]?8859(?:[-_]\\d+)?",
    "(?:many|musl)linux\\d*(?:_\\d+)+",
    "macosx(?:_\\d+)+",
    "(?:linux|win|osx|darwin|windows|freebsd|noarch)-(?:32|64)(?![A-Za-z0-9])",
    "(?:sha|md)[-_]\\d+",
  ].join("|"),
  "gi",
);

const NUMBER = /^\d+$/;
const V_NUMBER = /^[vV]\d+$/;
const HASH = /^(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}$/;
const DIGITS_LETTERS_DIGITS = /^\d+[A-Za-z]{1,2}\d+$/;
const DIGITS_LETTERS = /^\d+[A-Za-z]{1,3}\d*$/;
const QUALIFIER = new RegExp(
  "^(?:alpha|beta|rc|cr|pre|preview|dev|snapshot|final|release|ga|m|milestone|post|patch|build|" +
    "nightly|canary|next|hotfix|sp|a|b|p|r|u|deb\\d+u?|ubuntu)\\d*$",
  "i",
);
/** A last-segment extension: up to 10 letters and digits with at least one letter. */
const EXTENSION = /\.([A-Za-z0-9]{0,9}[A-Za-z][A-Za-z0-9]{0,9})$/;

function startsVersion(token: string): boolean {
  return NUMBER.test(token) || V_NUMBER.test(token) || HASH.test(token) ||
    DIGITS_LETTERS_DIGITS.test(token);
}

function continuesVersion(token: string): boolean {
  return startsVersion(token) || DIGITS_LETTERS.test(token) || QUALIFIER.test(token);
}

interface Token {
  start: number;
  end: number;
  text: string;
  kept: boolean;
}

function tokensOf(text: string): Token[] {
  const protectedSpans: Array<[number, number]> = [];
  for (const match of text.matchAll(PROTECTED)) {
    protectedSpans.push([match.index, match.index + match[0].length]);
  }
  const tokens: Token[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const start = match.index;
    const end = start + match[0].length;
    const kept = protectedSpans.some(([s, e]) => start < e && end > s);
    tokens.push({ start, end, text: match[0], kept });
  }
  return tokens;
}

/** One segment (or a file name without its extension) with each version run replaced by `*`. */
export function foldSegment(text: string): string {
  const tokens = tokensOf(text);
  let out = "";
  let at = 0;
  let i = 0;
  while (i < tokens.length) {
    const first = tokens[i];
    if (first.kept || !startsVersion(first.text)) {
      i++;
      continue;
    }
    let last = i;
    while (last + 1 < tokens.length) {
      const next = tokens[last + 1];
      const between = text.slice(tokens[last].end, next.start);
      if (between.length !== 1 || !JOINERS.has(between) || next.kept) break;
      if (!continuesVersion(next.text)) break;
      last++;
    }
    out += text.slice(at, first.start) + "*";
    at = tokens[last].end;
    i = last + 1;
  }
  return out + text.slice(at);
}

/** The group key of `key` under the `auto` policy: every segment folded, the extension kept. */
export function foldVersions(key: string): string {
  const segments = key.split("/");
  const lastIndex = segments.length - 1;
  return segments.map((segment, index) => {
    if (index < lastIndex) return foldSegment(segment);
    const ext = EXTENSION.exec(segment);
    // A name that is only an extension (`.zip`) or ends in a qualifier (`x.rc1`) keeps it whole.
    if (!ext || ext.index === 0 || QUALIFIER.test(ext[1]) || V_NUMBER.test(ext[1])) {
      return foldSegment(segment);
    }
    return foldSegment(segment.slice(0, ext.index)) + segment.slice(ext.index);
  }).join("/");
}
