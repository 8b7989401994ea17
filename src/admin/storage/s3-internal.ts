/**
 * S3 requests made inside the process on behalf of an admin session (the browse helpers): each is
 * a real S3 request through the S3 handler, acting as the session's principal, so IAM, the write
 * gate, quotas, `replication_target_only`, events and metrics treat it exactly as the same call
 * from an SDK. Only admission and SigV4 are skipped: the session already authenticated the user.
 */
import type { Principal } from "../../iam/mod.ts";
import { type ActingAs, childText, parseXml } from "../../s3/mod.ts";
import { dotSegmentOf } from "../../lib/mod.ts";
import { AdminError } from "../admin-error.ts";

export type InternalS3 = (
  raw: Request,
  remoteAddress?: string,
  acting?: ActingAs,
) => Promise<Response>;

/**
 * Refuses (400) a bucket or key holding a `.` or `..` segment, as S3 does (lib/key-segments.ts):
 * the in-process request's URL would resolve `/a/../b/x` to bucket `b` while the route (and its
 * audit) named `a`. `what` names the field in the message.
 */
export function checkTarget(bucket: string, key?: string, what = "key"): void {
  if (bucket === "." || bucket === "..") {
    throw new AdminError("bad_request", `Bucket "${bucket}" is not a bucket name`);
  }
  const dot = key === undefined ? null : dotSegmentOf(key);
  if (dot !== null) {
    const shown = key!.length > 80 ? `${key!.slice(0, 80)}…` : key;
    throw new AdminError(
      "bad_request",
      `Field "${what}": key "${shown}" has a "${dot}" path segment; S3 refuses such keys`,
      { s3_code: "InvalidObjectName" },
    );
  }
}

/**
 * `/bucket/key` with every segment percent-encoded (the handler decodes the raw path). Checks
 * the target first (`checkTarget`), so no in-process call can leave the bucket it names.
 */
export function s3Path(bucket: string, key?: string): string {
  checkTarget(bucket, key);
  const encode = (segment: string) => encodeURIComponent(segment);
  return key === undefined
    ? `/${encode(bucket)}`
    : `/${encode(bucket)}/${key.split("/").map(encode).join("/")}`;
}

/** Maps an S3 error answer to the admin error of the same meaning. */
export async function s3Failure(response: Response): Promise<AdminError> {
  const text = await response.text();
  let code = `HTTP ${response.status}`;
  let message = text.slice(0, 200);
  try {
    const doc = parseXml(text);
    code = childText(doc, "Code") ?? code;
    message = childText(doc, "Message") ?? message;
  } catch { /* not an S3 error document (HEAD answers have no body) */ }
  const kind = response.status === 403
    ? "forbidden"
    : response.status === 404
    ? "not_found"
    : response.status === 409
    ? "conflict"
    : response.status === 503
    ? "unavailable"
    : response.status >= 500
    ? "internal"
    : "bad_request";
  return new AdminError(kind, message || code, { s3_code: code });
}

/** One S3 call as `principal`; the caller reads or cancels the answer's body. */
export class ActingClient {
  constructor(
    private readonly s3: InternalS3,
    private readonly principal: Principal | null,
    private readonly clientIp: string,
  ) {}

  send(
    method: string,
    path: string,
    init: { headers?: HeadersInit; query?: string; body?: ReadableStream<Uint8Array> | string } =
      {},
  ) {
    const url = `http://svc.internal${path}${init.query ? `?${init.query}` : ""}`;
    // A stream body (an upload from the UI) passes through unread: memory stays flat.
    const request = new Request(url, {
      method,
      headers: init.headers,
      body: init.body,
      ...(init.body instanceof ReadableStream ? { duplex: "half" } : {}),
    } as RequestInit);
    return this.s3(request, this.clientIp, {
      principal: this.principal,
    });
  }
}
