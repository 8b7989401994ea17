/**
 * Replay detection around the execution of a header-signed mutating request. The guarantee: a
 * signature is executed at most once while it is remembered (replay.ts says for how long). What
 * a repeat of it gets:
 *
 * - while the first is still running: it waits for the first's outcome;
 * - the first failed: nothing was remembered, so the repeat runs (an honest retry);
 * - the first succeeded and the operation is idempotent (replay-rules.ts) with the same body:
 *   the first answer (status, headers, body), without running again;
 * - CreateMultipartUpload and conditional writes: executed again, every time (replay-rules.ts
 *   says why);
 * - otherwise (it would create something new, its body differs, or the first answer was too
 *   large to keep): 400 "Request replay detected", audited `replay_rejected`.
 *
 * Bodies: a signed payload hash or signed aws-chunked pins the body, so a repeat is answered
 * before its body is read. An unsigned small XML body (CreateBucket, DeleteObjects,
 * CompleteMultipartUpload) is read and hashed before the first execution and before answering a
 * repeat; an unsigned object body is staged, compared by MD5 and discarded: the guard hands the
 * operation a body comparison (replay-decision.ts) and reads its verdict afterwards.
 */
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";
import { readBounded, type RequestContext } from "../../http/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import type { VerifiedRequest } from "../sigv4/sigv4-request.ts";
import { type ReplayBodyComparison, type ReplayDecision, RUN_AS_SENT } from "./replay-decision.ts";
import { bodyIsSigned, type ReplayRule, replayRule, rerunsOnRepeat } from "./replay-rules.ts";
import {
  type ReplayAnswer,
  type ReplayClaim,
  type ReplayEntry,
  type ReplayLimits,
  ReplayStore,
} from "./replay.ts";

const log = getLogger("svc::auth");

export const MUTATING = new Set(["PUT", "POST", "DELETE", "PATCH"]);

/** Larger than any XML body an idempotent operation accepts (CompleteMultipartUpload: 4 MiB). */
const SMALL_BODY_LIMIT = 4 << 20;

/** Headers of the first answer that are not replayed (the handler or HTTP layer sets them). */
const UNKEPT_HEADERS = new Set([
  "content-length",
  "date",
  "connection",
  "transfer-encoding",
  "x-amz-request-id",
  "x-amz-id-2",
]);

export interface ReplaySettings {
  /** 0 disables replay detection. */
  windowSeconds: number;
  clockSkewSeconds: number;
}

export type ReplayAudit = (fields: Record<string, unknown>) => void;

/** The operation replay detection runs, told what it decided (replay-decision.ts). */
export type ReplayWork = (decision: ReplayDecision) => Promise<Response>;

function replayRefused(): SvcError {
  return new SvcError("InvalidRequest", "Request replay detected");
}

function waitFor(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Reads a small request body whole and puts it back as a fresh body, so the operation still
 * reads it; returns its SHA-256. The bytes are hashed as sent (aws-chunked framing included):
 * an honest repeat sends the same bytes.
 */
async function bufferSmallBody(request: RequestContext): Promise<string> {
  const raw = request.raw;
  const bytes = raw.body === null
    ? new Uint8Array()
    : await readBounded(raw.body, SMALL_BODY_LIMIT);
  request.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: bytes });
  return createHash("sha256").update(bytes).digest("hex");
}

function headerPairs(answer: ReplayAnswer): [string, string][] {
  if (answer.headers === "") return [];
  const parts = answer.headers.split("\n");
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) pairs.push([parts[i], parts[i + 1]]);
  return pairs;
}

/** The first answer's ETag as the MD5 of the body it stored, or null when it is not one. */
function bodyMd5(answer: ReplayAnswer): string | null {
  const etag = headerPairs(answer).find(([name]) => name === "etag")?.[1].replace(/^"|"$/g, "");
  return etag !== undefined && /^[0-9a-f]{32}$/.test(etag) ? etag : null;
}

function answerOf(answer: ReplayAnswer): Response {
  const headers = new Headers();
  for (const [name, value] of headerPairs(answer)) headers.append(name, value);
  return new Response(answer.body?.slice() ?? null, { status: answer.status, headers });
}

export class ReplayGuard {
  readonly store: ReplayStore;
  readonly #settings: () => ReplaySettings;
  readonly #audit: ReplayAudit;

  constructor(
    settings: () => ReplaySettings,
    audit: ReplayAudit,
    limits: Partial<ReplayLimits> = {},
  ) {
    this.#settings = settings;
    this.#audit = audit;
    this.store = new ReplayStore(limits);
  }

  /** Runs `work` for the request unless replay detection answers or refuses it instead. */
  async run(
    request: RequestContext,
    verified: VerifiedRequest | undefined,
    ip: string,
    work: ReplayWork,
  ): Promise<Response> {
    const { windowSeconds, clockSkewSeconds } = this.#settings();
    if (
      verified === undefined || verified.presigned || windowSeconds <= 0 ||
      !MUTATING.has(request.method) || rerunsOnRepeat(request)
    ) {
      return await work(RUN_AS_SENT);
    }
    const rule = replayRule(request);
    const pinned = bodyIsSigned(verified.payloadHash);
    for (;;) {
      const now = Date.now();
      const entry = this.store.get(verified.signature, now);
      if (entry === undefined) {
        // Remembered until the signature could no longer verify, or the window ends if sooner.
        const verifiable = verified.requestTime + clockSkewSeconds * 1000 + 1000;
        const expires = Math.min(now + windowSeconds * 1000, verifiable);
        const claim = this.store.claim(verified.signature, now, expires);
        return await this.#first(request, rule, pinned, claim, work);
      }
      if (entry.inFlight === null) {
        return await this.#repeat(request, ip, rule, pinned, entry, work);
      }
      await waitFor(entry.inFlight, request.signal);
    }
  }

  async #first(
    request: RequestContext,
    rule: ReplayRule | null,
    pinned: boolean,
    claim: ReplayClaim,
    work: ReplayWork,
  ): Promise<Response> {
    let response: Response;
    let bodyDigest: string | null = null;
    try {
      if (rule?.body === "small" && !pinned) bodyDigest = await bufferSmallBody(request);
      response = await work(RUN_AS_SENT);
    } catch (err) {
      this.store.forget(claim);
      throw err;
    }
    if (response.status >= 400) {
      this.store.forget(claim);
      return response;
    }
    if (rule === null) {
      this.store.settle(claim, null);
      return response;
    }
    const kept: string[] = [];
    response.headers.forEach((value, name) => {
      if (!UNKEPT_HEADERS.has(name)) kept.push(name, value);
    });
    const answer: ReplayAnswer = { status: response.status, headers: kept.join("\n"), body: null };
    if (response.body === null) {
      this.store.settle(claim, answer, bodyDigest);
      return response;
    }
    // Keep a copy of the body as it streams to the client; the repeat waits until it is kept.
    const [toClient, toKeep] = response.body.tee();
    this.#keepBody(toKeep, claim, answer, bodyDigest);
    return new Response(toClient, { status: response.status, headers: response.headers });
  }

  async #keepBody(
    body: ReadableStream<Uint8Array>,
    claim: ReplayClaim,
    answer: ReplayAnswer,
    bodyDigest: string | null,
  ): Promise<void> {
    try {
      answer.body = await readBounded(body, this.store.limits.maxBodyBytes);
      this.store.settle(claim, answer, bodyDigest);
    } catch {
      // Too large to keep (or the body failed): the first still counts as executed, so a
      // repeat is refused rather than run again.
      await body.cancel().catch(() => {});
      this.store.settle(claim, null);
    }
  }

  async #repeat(
    request: RequestContext,
    ip: string,
    rule: ReplayRule | null,
    pinned: boolean,
    entry: ReplayEntry,
    work: ReplayWork,
  ): Promise<Response> {
    const answer = entry.answer;
    if (rule === null || answer === null) {
      throw this.#refuse(request, ip, rule === null ? "not_idempotent" : "answer_not_kept");
    }
    if (pinned || rule.body === "none") return answerOf(answer);
    if (rule.body === "small") {
      if (entry.bodyDigest === null) throw this.#refuse(request, ip, "body_not_comparable");
      const raw = request.raw.body;
      const bytes = raw === null ? new Uint8Array() : await readBounded(raw, SMALL_BODY_LIMIT);
      const digest = createHash("sha256").update(bytes).digest("hex");
      if (digest !== entry.bodyDigest) throw this.#refuse(request, ip, "body_differs");
      return answerOf(answer);
    }
    // An object body: the operation stages it, compares it before commit and discards it
    // (body/replay-body-check.ts), writing the verdict on the comparison.
    const md5 = bodyMd5(answer);
    if (md5 === null) throw this.#refuse(request, ip, "body_not_comparable");
    const compareBody: ReplayBodyComparison = { expectedMd5: md5, verdict: "pending" };
    let response: Response | undefined;
    let failure: unknown;
    try {
      response = await work({ compareBody });
    } catch (err) {
      failure = err;
    }
    if (compareBody.verdict === "same") return answerOf(answer);
    if (compareBody.verdict === "different") throw this.#refuse(request, ip, "body_differs");
    if (response !== undefined && response.status < 400) {
      // The operation finished without staging the body: it must not count as answered.
      log.error("replayed upload completed without its body check", {
        method: request.method,
        resource: request.resource,
      });
    }
    if (response === undefined) throw failure;
    return response;
  }

  #refuse(request: RequestContext, ip: string, reason: string): SvcError {
    this.#audit({ ip, method: request.method, resource: request.resource, reason });
    return replayRefused();
  }
}
