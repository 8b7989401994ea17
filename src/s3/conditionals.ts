/**
 * Conditional requests: HTTP dates, ETag lists, and S3's precedence rules for reads (GET/HEAD),
 * copy sources (CopyObject/UploadPartCopy) and conditional writes (PutObject /
 * CompleteMultipartUpload).
 *
 * S3 behaviour this follows (AWS API reference for GetObject, HeadObject, CopyObject,
 * UploadPartCopy, PutObject and the conditional-writes guide):
 * - Reads: If-Match true + If-Unmodified-Since false → 200; If-None-Match false +
 *   If-Modified-Since true → 304. That is RFC 9110's order: a present If-Match decides alone,
 *   otherwise If-Unmodified-Since; then a present If-None-Match decides alone, otherwise
 *   If-Modified-Since. Failures of the first pair are 412, of the second pair 304.
 * - Copy sources use the same pairs but every failure is 412 (there is no 304 for a copy).
 * - Writes: `If-None-Match: *` fails with 412 when the key exists; `If-Match: <etag>` fails with
 *   412 on a different ETag and with 404 NoSuchKey when no object exists (real S3 answers
 *   NoSuchKey there; the guide lists 404 for If-Match). If-None-Match accepts only `*`: any other
 *   value gets 501 NotImplemented ("A header you provided implies functionality that is not
 *   implemented"), as S3 answers.
 *
 * Dates: unparseable dates are ignored (RFC 9110). An If-Modified-Since later than the server's
 * clock is invalid and ignored (RFC 2616 14.25; S3 copies despite a future
 * x-amz-copy-source-if-modified-since). Comparisons use whole seconds, the precision of the
 * Last-Modified header a client echoes back.
 */

import { SvcError } from "../lib/mod.ts";

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

const TIME = String.raw`(\d{2}):(\d{2}):(\d{2})`;
const MONTH = `(${MONTHS.join("|")})`;
const IMF_FIXDATE = new RegExp(
  `^(?:${DAYS.join("|")}), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`,
);
const RFC_850 = new RegExp(
  `^(?:${LONG_DAYS.join("|")}), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`,
);
const ASCTIME = new RegExp(`^(?:${DAYS.join("|")}) ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/** RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. */
export function formatHttpDate(ms: number): string {
  // ECMAScript specifies toUTCString() as exactly the IMF-fixdate layout.
  return new Date(ms).toUTCString();
}

/**
 * Parses the three HTTP-date forms (IMF-fixdate, RFC 850, asctime) to epoch milliseconds; null
 * for anything else. `now` anchors RFC 850's two-digit years.
 */
export function parseHttpDate(text: string | null | undefined, now = Date.now()): number | null {
  if (text === null || text === undefined) return null;
  const value = text.trim();
  let m = IMF_FIXDATE.exec(value);
  if (m !== null) return build(+m[3], m[2], +m[1], +m[4], +m[5], +m[6]);
  m = RFC_850.exec(value);
  if (m !== null) {
    return build(fullYear(+m[3], now), m[2], +m[1], +m[4], +m[5], +m[6]);
  }
  m = ASCTIME.exec(value);
  if (m !== null) return build(+m[6], m[1], +m[2].trim(), +m[3], +m[4], +m[5]);
  return null;
}

// RFC 9110 5.6.7: a two-digit year more than 50 years in the future means the most recent past
// year with those digits.
function fullYear(twoDigits: number, now: number): number {
  const current = new Date(now).getUTCFullYear();
  let year = current - (current % 100) + twoDigits;
  if (year > current + 50) year -= 100;
  return year;
}

function build(
  year: number,
  monthName: string,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | null {
  const month = MONTHS.indexOf(monthName);
  // The grammar allows second 60 (a leap second); JS dates have none, so it rolls over.
  if (hour > 23 || minute > 59 || second > 60 || day < 1) return null;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month, day);
  if (date.getUTCDate() !== day) return null; // 31 Feb and friends
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime();
}

/** The four conditional headers of a read, or of a copy source with the prefix stripped. */
export interface ConditionHeaders {
  ifMatch?: string | null;
  ifNoneMatch?: string | null;
  ifModifiedSince?: string | null;
  ifUnmodifiedSince?: string | null;
}

/** The two headers of a conditional write. */
export interface WriteConditionHeaders {
  ifMatch?: string | null;
  ifNoneMatch?: string | null;
}

export interface ConditionTarget {
  /** ETag, quoted or not. */
  etag: string;
  /** Last-Modified, epoch milliseconds. */
  lastModified: number;
}

export type ReadOutcome = "ok" | "not-modified" | "precondition-failed";
export type CopySourceOutcome = "ok" | "precondition-failed";

/** Reads the conditional headers of a GET or HEAD. */
export function readConditionHeaders(headers: Headers): ConditionHeaders {
  return {
    ifMatch: headers.get("if-match"),
    ifNoneMatch: headers.get("if-none-match"),
    ifModifiedSince: headers.get("if-modified-since"),
    ifUnmodifiedSince: headers.get("if-unmodified-since"),
  };
}

/** Reads the x-amz-copy-source-if-* headers of a copy. */
export function copySourceConditionHeaders(headers: Headers): ConditionHeaders {
  return {
    ifMatch: headers.get("x-amz-copy-source-if-match"),
    ifNoneMatch: headers.get("x-amz-copy-source-if-none-match"),
    ifModifiedSince: headers.get("x-amz-copy-source-if-modified-since"),
    ifUnmodifiedSince: headers.get("x-amz-copy-source-if-unmodified-since"),
  };
}

/** Reads the conditional headers of a PutObject or CompleteMultipartUpload. */
export function writeConditionHeaders(headers: Headers): WriteConditionHeaders {
  return { ifMatch: headers.get("if-match"), ifNoneMatch: headers.get("if-none-match") };
}

type Failed = "If-Match" | "If-Unmodified-Since" | "If-None-Match" | "If-Modified-Since";

interface Verdict {
  outcome: ReadOutcome;
  /** The header that decided a failure. */
  condition?: Failed;
}

function judge(headers: ConditionHeaders, target: ConditionTarget, now: number): Verdict {
  const modifiedSecond = Math.floor(target.lastModified / 1000);
  if (present(headers.ifMatch)) {
    if (!etagListMatches(headers.ifMatch, target.etag)) {
      return { outcome: "precondition-failed", condition: "If-Match" };
    }
  } else {
    const since = parseHttpDate(headers.ifUnmodifiedSince, now);
    if (since !== null && modifiedSecond > Math.floor(since / 1000)) {
      return { outcome: "precondition-failed", condition: "If-Unmodified-Since" };
    }
  }
  if (present(headers.ifNoneMatch)) {
    if (etagListMatches(headers.ifNoneMatch, target.etag)) {
      return { outcome: "not-modified", condition: "If-None-Match" };
    }
  } else {
    const since = parseHttpDate(headers.ifModifiedSince, now);
    if (since !== null && since <= now && modifiedSecond <= Math.floor(since / 1000)) {
      return { outcome: "not-modified", condition: "If-Modified-Since" };
    }
  }
  return { outcome: "ok" };
}

/** Evaluates GET/HEAD conditions against an existing object. */
export function evaluateReadConditions(
  headers: ConditionHeaders,
  target: ConditionTarget,
  now = Date.now(),
): ReadOutcome {
  return judge(headers, target, now).outcome;
}

/** Like evaluateReadConditions, but throws NotModified (304) or PreconditionFailed (412). */
export function assertReadConditions(
  headers: ConditionHeaders,
  target: ConditionTarget,
  now = Date.now(),
): void {
  const verdict = judge(headers, target, now);
  if (verdict.outcome === "not-modified") {
    throw new SvcError("NotModified", `The object was not modified (${verdict.condition}).`);
  }
  if (verdict.outcome === "precondition-failed") {
    throw preconditionFailed(verdict.condition!);
  }
}

/** Evaluates x-amz-copy-source-if-* conditions; every failure is a 412. */
export function evaluateCopySourceConditions(
  headers: ConditionHeaders,
  source: ConditionTarget,
  now = Date.now(),
): CopySourceOutcome {
  return judge(headers, source, now).outcome === "ok" ? "ok" : "precondition-failed";
}

/** Like evaluateCopySourceConditions, but throws PreconditionFailed naming the header. */
export function assertCopySourceConditions(
  headers: ConditionHeaders,
  source: ConditionTarget,
  now = Date.now(),
): void {
  const verdict = judge(headers, source, now);
  if (verdict.outcome !== "ok") {
    throw preconditionFailed(`x-amz-copy-source-${verdict.condition!}`);
  }
}

/**
 * Checks the header values alone, so a write can be refused before its body is read:
 * If-None-Match accepts only `*`.
 */
export function validateWriteConditionHeaders(headers: WriteConditionHeaders): void {
  if (present(headers.ifNoneMatch) && headers.ifNoneMatch.trim() !== "*") {
    throw new SvcError(
      "NotImplemented",
      `A header you provided implies functionality that is not implemented: ` +
        `If-None-Match "${headers.ifNoneMatch}" (only "*" is supported).`,
      { Header: "If-None-Match" },
    );
  }
}

/**
 * Evaluates PutObject/CompleteMultipartUpload conditions against the object currently stored
 * under the key (null when there is none). Throws NotImplemented, PreconditionFailed or
 * NoSuchKey. Racing writers are the caller's concern (409 ConditionalRequestConflict at commit).
 */
export function evaluateWriteConditions(
  headers: WriteConditionHeaders,
  existing: { etag: string } | null,
): void {
  validateWriteConditionHeaders(headers);
  if (present(headers.ifNoneMatch) && existing !== null) {
    throw preconditionFailed("If-None-Match");
  }
  if (present(headers.ifMatch)) {
    if (existing === null) {
      throw new SvcError(
        "NoSuchKey",
        `The specified key does not exist, so If-Match "${headers.ifMatch}" cannot match.`,
      );
    }
    if (!etagListMatches(headers.ifMatch, existing.etag)) throw preconditionFailed("If-Match");
  }
}

function preconditionFailed(condition: string): SvcError {
  return new SvcError(
    "PreconditionFailed",
    `At least one of the pre-conditions you specified did not hold: "${condition}".`,
    { Condition: condition },
  );
}

function present(value: string | null | undefined): value is string {
  return value !== null && value !== undefined && value.trim() !== "";
}

/**
 * Whether an If-Match/If-None-Match list names the ETag. Accepts `*`, quoted or bare tags,
 * comma-separated lists and weak `W/` tags. Weak tags compare by their opaque value: S3 ETags
 * are never weak, and clients that echo a proxy-weakened tag mean the same object.
 */
export function etagListMatches(list: string, etag: string): boolean {
  const wanted = bareEtag(etag);
  return splitEtagList(list).some((tag) => tag.wildcard || tag.value === wanted);
}

/** An ETag without W/ and quotes. */
export function bareEtag(tag: string): string {
  let value = tag.trim();
  if (value.startsWith("W/") || value.startsWith("w/")) value = value.slice(2);
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    value = value.slice(1, -1);
  }
  return value;
}

interface ListedTag {
  /** A bare `*`: any current object. */
  wildcard: boolean;
  value: string;
}

// A quoted entity-tag may itself contain commas, so the list is tokenized rather than split.
function splitEtagList(list: string): ListedTag[] {
  const tags: ListedTag[] = [];
  let i = 0;
  while (i < list.length) {
    while (i < list.length && (list[i] === "," || list[i] === " " || list[i] === "\t")) i++;
    if (i >= list.length) break;
    if ((list[i] === "W" || list[i] === "w") && list[i + 1] === "/") i += 2;
    if (list[i] === '"') {
      const close = list.indexOf('"', i + 1);
      const end = close === -1 ? list.length : close;
      tags.push({ wildcard: false, value: list.slice(i + 1, end) });
      i = end + 1;
    } else {
      const comma = list.indexOf(",", i);
      const end = comma === -1 ? list.length : comma;
      const value = list.slice(i, end).trim();
      tags.push({ wildcard: value === "*", value });
      i = end;
    }
  }
  return tags;
}
