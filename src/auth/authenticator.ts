/**
 * Authentication of S3 requests: SigV4 parse and verify (header or presigned), with the per-IP
 * lockout refusing whatever does not verify from a locked-out address, then replay detection
 * around the operation (execute()). Counters and
 * audit events are kept where the metrics and admin work can read them.
 */
import { SvcError } from "../lib/mod.ts";
import { getLogger, maskKey } from "../observability/mod.ts";
import { type RequestContext, splitRawUrl } from "../http/mod.ts";
import { clientIp } from "./client-ip.ts";
import type { CredentialStore, Principal } from "../iam/mod.ts";
import { Lockout, type LockoutSettings } from "./lockout.ts";
import { ReplayGuard, type ReplayWork } from "./replay/replay-guard.ts";
import type { ReplayLimits } from "./replay/replay.ts";
import { failureReason } from "./sigv4/sigv4-failures.ts";
import { parseSignedRequest } from "./sigv4/sigv4-parse.ts";
import type { VerifiedRequest } from "./sigv4/sigv4-request.ts";
import { verifySignedRequest } from "./sigv4/sigv4.ts";

const log = getLogger("svc::auth");

export interface AuthSettings {
  /** `none`: open access, signatures ignored, counters untouched. */
  open: boolean;
  clockSkewSeconds: number;
  replayWindowSeconds: number;
  trustProxyHeaders: boolean;
  lockout: LockoutSettings;
}

export type FailureReason = "missing_header" | "invalid_presigned" | "invalid_signature";

export interface AuthStats {
  attempts: { success: number; failure: number };
  failures: Record<FailureReason, number>;
}

export type AuditEvent = "auth_failure" | "replay_rejected" | "lockout";

export interface AuthOutcome {
  /** null for open access and for requests a later step authenticates (POST policy forms). */
  principal: Principal | null;
  verified?: VerifiedRequest;
  /** A browser POST upload: its policy and signature are checked by the POST handler. */
  formPost?: boolean;
}

/** Codes of a failed credential check (not of a policy condition or a malformed form). */
const LATE_AUTH_CODES = new Set(["SignatureDoesNotMatch", "InvalidAccessKeyId"]);

function isFormPost(request: RequestContext): boolean {
  const type = request.headers.get("content-type")?.toLowerCase() ?? "";
  return request.method === "POST" && request.bucket !== null && request.key === null &&
    type.startsWith("multipart/form-data");
}

function lockedOut(ms: number): SvcError {
  return new SvcError(
    "SlowDown",
    `Too many authentication failures from this address; try again in ${Math.ceil(ms / 1000)} s`,
  );
}

export class Authenticator {
  readonly stats: AuthStats = {
    attempts: { success: 0, failure: 0 },
    failures: { missing_header: 0, invalid_presigned: 0, invalid_signature: 0 },
  };
  readonly #credentials: () => CredentialStore;
  readonly #settings: () => AuthSettings;
  readonly #audit: (event: AuditEvent, fields: Record<string, unknown>) => void;
  readonly #replays: ReplayGuard;
  readonly #lockout = new Lockout();

  constructor(
    credentials: () => CredentialStore,
    settings: () => AuthSettings,
    /** Where audit events go; the runtime passes the audit ring (which also logs them). */
    audit: (event: AuditEvent, fields: Record<string, unknown>) => void = (event, fields) =>
      log.warn(event, fields),
    replayLimits: Partial<ReplayLimits> = {},
  ) {
    this.#credentials = credentials;
    this.#settings = settings;
    this.#audit = audit;
    this.#replays = new ReplayGuard(
      () => {
        const { open, replayWindowSeconds, clockSkewSeconds } = this.#settings();
        return { windowSeconds: open ? 0 : replayWindowSeconds, clockSkewSeconds };
      },
      (fields) => this.#audit("replay_rejected", fields),
      replayLimits,
    );
  }

  /** Entries held by replay detection (one per recent signed write). */
  get replayEntries(): number {
    return this.#replays.store.size;
  }

  /** Decides who sent the request, or throws the S3 error that refuses it. */
  authenticate(
    request: RequestContext,
    remoteAddress: string | undefined,
    now = Date.now(),
  ): AuthOutcome {
    const settings = this.#settings();
    if (settings.open) return { principal: null };
    const ip = clientIp(request.headers, remoteAddress, settings.trustProxyHeaders);
    const locked = this.#lockout.lockedFor(ip, now);
    const { path, search } = splitRawUrl(request.raw.url);
    const input = {
      method: request.method,
      rawPath: path,
      rawQuery: search,
      headers: request.headers,
    };
    let verified: VerifiedRequest | null;
    try {
      const signed = parseSignedRequest(input);
      verified = signed === null
        ? null
        : verifySignedRequest(signed, input, this.#credentials(), now, {
          clockSkewSeconds: settings.clockSkewSeconds,
        });
    } catch (err) {
      // A locked-out address learns nothing more, and its failures do not extend the lockout.
      if (locked > 0) {
        this.stats.attempts.failure++;
        this.stats.failures[failureReason(err)]++;
        throw lockedOut(locked);
      }
      this.#fail(err, ip, now, settings);
      throw err;
    }
    // A verified signature proves the secret, which is what the lockout guards: it is served
    // even from a locked-out address (a NAT shared with an attacker, or a victim of forgeries).
    if (verified === null && locked > 0) throw lockedOut(locked);
    // Outside the try: an anonymous refusal is counted once, as missing_header, not as a
    // signature failure, and does not count toward the lockout.
    if (verified === null) return this.#anonymous(request);
    this.stats.attempts.success++;
    return { principal: verified.principal, verified };
  }

  /**
   * Runs an authenticated request's operation under replay detection (replay-guard.ts): a
   * repeat of a signed write gets the first answer, waits for it, or is refused, but never runs
   * twice while its signature is remembered. `work` is told what replay detection decided
   * (replay-decision.ts): a repeated upload must stage its body through the comparison it names.
   */
  execute(
    request: RequestContext,
    verified: VerifiedRequest | undefined,
    remoteAddress: string | undefined,
    work: ReplayWork,
  ): Promise<Response> {
    const ip = clientIp(request.headers, remoteAddress, this.#settings().trustProxyHeaders);
    return this.#replays.run(request, verified, ip, work);
  }

  /**
   * Counts a credential failure found after authentication, while the body was read: a forged
   * aws-chunked chunk signature, or a browser POST form whose policy signature failed.
   */
  recordLateFailure(
    err: unknown,
    request: RequestContext,
    remoteAddress: string | undefined,
  ): void {
    const settings = this.#settings();
    if (settings.open || !(err instanceof SvcError) || !LATE_AUTH_CODES.has(err.code)) return;
    const ip = clientIp(request.headers, remoteAddress, settings.trustProxyHeaders);
    this.#fail(err, ip, Date.now(), settings);
  }

  #anonymous(request: RequestContext): AuthOutcome {
    if (request.method === "HEAD" && request.bucket === null) return { principal: null };
    if (isFormPost(request)) return { principal: null, formPost: true };
    this.stats.attempts.failure++;
    this.stats.failures.missing_header++;
    throw new SvcError("AccessDenied", "Access Denied: the request is not signed");
  }

  #fail(err: unknown, ip: string, now: number, settings: AuthSettings): void {
    if (!(err instanceof SvcError)) return;
    const reason = failureReason(err);
    this.stats.attempts.failure++;
    this.stats.failures[reason]++;
    const accessKey = err.details.AWSAccessKeyId;
    this.#audit("auth_failure", {
      ip,
      reason,
      code: err.code,
      ...(accessKey ? { access_key: maskKey(accessKey) } : {}),
    });
    if (this.#lockout.recordFailure(ip, now, settings.lockout)) {
      this.#audit("lockout", { ip, seconds: settings.lockout.lockoutSeconds });
    }
  }
}
