/**
 * One access-log line: the fields of a finished request as one JSON object. Surfaces note what
 * only they know (request id, principal, operation, bucket, key, storage decision) on the request
 * object; the listener's wrapper (runtime/access-logging.ts) adds timing, address and byte counts.
 * Nothing secret is ever a field: no header is logged, and a query is logged only redacted.
 */

/** What a surface knows about a request it answered. */
export interface AccessNote {
  requestId?: string;
  /** The access key's user name (or admin session user); null when anonymous. */
  principal?: string | null;
  operation?: string;
  bucket?: string | null;
  key?: string | null;
  /** The storage decision (`x-amz-storage-type`'s value), when the response carried one. */
  storage?: string;
}

export interface AccessEntry extends AccessNote {
  time: Date;
  client: string | null;
  method: string;
  /** The path as sent, without its query. */
  path: string;
  /** The query string, unredacted; redacted when formatted. */
  query: string;
  status: number;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** The client went away before the body was sent in full. */
  cancelled: boolean;
}

const notes = new WeakMap<Request, AccessNote>();

/** Records what a surface knows about `request` (merged with earlier notes). */
export function noteAccess(request: Request, note: AccessNote): void {
  const earlier = notes.get(request);
  notes.set(request, earlier ? { ...earlier, ...note } : note);
}

export function accessNoteOf(request: Request): AccessNote | undefined {
  return notes.get(request);
}

/** Query parameters whose values are credentials or signatures (compared lower-cased). */
const SECRET_PARAMS = new Set([
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "signature",
  "awsaccesskeyid",
  "x-amz-signature-v4",
  "token",
  "password",
]);

/** The query with the value of every credential-bearing parameter replaced by `REDACTED`. */
export function redactQuery(search: string): string {
  if (search === "") return "";
  return search.split("&").map((part) => {
    const eq = part.indexOf("=");
    const rawName = eq < 0 ? part : part.slice(0, eq);
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replaceAll("+", " "));
    } catch {
      // an undecodable name is compared as sent
    }
    return eq >= 0 && SECRET_PARAMS.has(name.toLowerCase()) ? `${rawName}=REDACTED` : part;
  }).join("&");
}

/** The JSON line (without its newline) for one finished request. */
export function formatAccessLine(entry: AccessEntry): string {
  const line: Record<string, unknown> = {
    time: entry.time.toISOString(),
    request_id: entry.requestId ?? null,
    client: entry.client,
    principal: entry.principal ?? null,
    operation: entry.operation ?? `${entry.method} ${entry.path}`,
    method: entry.method,
    path: entry.path,
    bucket: entry.bucket ?? null,
    key: entry.key ?? null,
    status: entry.status,
    bytes_in: entry.bytesIn,
    bytes_out: entry.bytesOut,
    duration_ms: Math.round(entry.durationMs * 1000) / 1000,
  };
  if (entry.query !== "") line.query = redactQuery(entry.query);
  if (entry.storage !== undefined) line.storage = entry.storage;
  if (entry.cancelled) line.cancelled = true;
  return JSON.stringify(line);
}
