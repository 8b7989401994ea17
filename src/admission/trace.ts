/**
 * Admission trace: evaluates a synthetic request against the chain a config builds and says
 * which block decided and what happens next (`POST/GET /_/api/admin/config/trace`, `svc
 * admission trace`). It runs the same chain builder and the same decision (decide.ts) as the S3
 * path, so a trace cannot disagree with what a real request gets.
 *
 * The synthetic request names a method and either a path-style `path` (`/bucket/key`, with an
 * optional `?query`, percent-encoded as a client would send it) or `bucket` and `key` as plain
 * text. `source_ip` is taken as the client address (no proxy headers are involved);
 * `authenticated` says whether the request carries a signature (which authentication would then
 * check).
 */
import { type Config, isIp } from "../config/mod.ts";
import { buildAdmissionChain } from "./build.ts";
import type { AdmissionAction, AdmissionRequest } from "./chain.ts";
import { decideAdmission, requestKindOf } from "./decide.ts";

/** A synthetic request that does not describe one; the message says why. */
export class TraceInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TraceInputError";
  }
}

export interface TraceInput {
  method: string;
  /** Path-style request path, percent-encoded, optionally with `?query`. */
  path?: string;
  bucket?: string;
  key?: string;
  /** Query string (without `?`) when `bucket`/`key` are used; decides listing vs other. */
  query?: string;
  sourceIp?: string;
  authenticated?: boolean;
}

export interface TraceResult {
  request: {
    method: string;
    bucket: string | null;
    key: string | null;
    kind: AdmissionRequest["kind"];
    authenticated: boolean;
    source_ip: string | null;
  };
  /** anonymous: admitted without authentication; authenticate: goes on to authentication. */
  outcome: "anonymous" | "authenticate" | "deny" | "reject";
  /** The block that decided (its position in the chain from 0), or null when none matched. */
  decided_by: { name: string; action: string; index: number } | null;
  /** The status a refusal answers with (deny: 403; reject: the configured status). */
  status?: number;
  explanation: string;
  /** Warnings of building the chain (blocks that can never match, ...). */
  warnings: string[];
}

const METHOD = /^[A-Za-z]{1,16}$/;

function decode(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    throw new TraceInputError(`Could not decode the path component "${component}"`);
  }
}

/** Bucket, key and query of the synthetic request, as the S3 parser would see them. */
function locate(input: TraceInput): { bucket: string | null; key: string | null; query: string } {
  if (input.path !== undefined) {
    if (input.bucket !== undefined || input.key !== undefined) {
      throw new TraceInputError("Give either path or bucket and key, not both");
    }
    if (!input.path.startsWith("/")) {
      throw new TraceInputError(`Path must start with "/", got "${input.path}"`);
    }
    const q = input.path.indexOf("?");
    const path = q < 0 ? input.path : input.path.slice(0, q);
    const query = q < 0 ? input.query ?? "" : input.path.slice(q + 1);
    const trimmed = path.replace(/^\/+/, "");
    const slash = trimmed.indexOf("/");
    const bucket = trimmed === "" ? null : decode(slash < 0 ? trimmed : trimmed.slice(0, slash));
    const rawKey = bucket !== null && slash >= 0 ? trimmed.slice(slash + 1) : "";
    return { bucket, key: rawKey === "" ? null : decode(rawKey), query };
  }
  if (input.key !== undefined && input.key !== "" && !input.bucket) {
    throw new TraceInputError("A key needs a bucket");
  }
  return {
    bucket: input.bucket ? input.bucket : null,
    key: input.key ? input.key : null,
    query: input.query ?? "",
  };
}

function actionName(action: AdmissionAction): string {
  return typeof action === "string" ? action : action.type;
}

/** Evaluates `input` against the admission chain `config` builds. */
export function traceAdmission(config: Config, input: TraceInput): TraceResult {
  if (!METHOD.test(input.method)) {
    throw new TraceInputError(`Method must be an HTTP method name, got "${input.method}"`);
  }
  if (input.sourceIp !== undefined && !isIp(input.sourceIp)) {
    throw new TraceInputError(`source_ip must be an IP address, got "${input.sourceIp}"`);
  }
  const { bucket, key, query } = locate(input);
  const method = input.method.toUpperCase();
  const facts: AdmissionRequest = {
    method,
    bucket,
    key,
    kind: requestKindOf({ method, bucket, key, query: new URLSearchParams(query) }),
    signed: input.authenticated ?? false,
    clientIp: input.sourceIp,
  };
  const { chain, warnings } = buildAdmissionChain(config);
  const decision = decideAdmission(chain.blocks, facts);
  const block = decision.block;
  const decidedBy = block === null
    ? null
    : { name: block.name, action: actionName(block.action), index: chain.blocks.indexOf(block) };
  const label = block === null ? "" : `block "${block.name}" (#${chain.blocks.indexOf(block)})`;
  let explanation: string;
  let status: number | undefined;
  switch (decision.outcome) {
    case "authenticate":
      explanation = block === null
        ? "no block matched: falls through to authentication"
        : block.action === "continue"
        ? `${label} says continue: goes on to authentication`
        : facts.signed
        ? `${label} admits anonymous requests, but this one is signed: authentication checks ` +
          "its signature"
        : `${label} admits anonymous reads only; ${method} goes on to authentication`;
      break;
    case "anonymous": {
      const prefixes = block?.match.publicPrefixes;
      explanation = `${label} admits the request without authentication` +
        (prefixes && facts.kind === "listing"
          ? `; the listing shows only keys under ${prefixes.map((p) => `"${p}"`).join(", ")}`
          : "");
      break;
    }
    case "deny":
      status = 403;
      explanation = `${label} denies the request (403 AccessDenied)`;
      break;
    case "reject":
      status = decision.status;
      explanation = `${label} rejects the request with status ${decision.status}` +
        (decision.message ? ` ("${decision.message}")` : "");
      break;
  }
  return {
    request: {
      method,
      bucket,
      key,
      kind: facts.kind,
      authenticated: facts.signed,
      source_ip: input.sourceIp ?? null,
    },
    outcome: decision.outcome,
    decided_by: decidedBy,
    ...(status === undefined ? {} : { status }),
    explanation,
    warnings,
  };
}
