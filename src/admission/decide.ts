/**
 * What the admission chain decides for a request, as data: the S3 path (src/s3/admission.ts)
 * turns it into an answer, the trace (trace.ts) into an explanation, so the two can never
 * disagree. Also the request kind, computed from the parts a synthetic request has too.
 */
import { ANONYMOUS_METHODS } from "../config/mod.ts";
import {
  type AdmissionBlock,
  type AdmissionRequest,
  evaluateChain,
  type RequestKind,
} from "./chain.ts";

export type AdmissionDecision =
  /** No block matched, or the block said `continue` or cannot admit this request anonymously. */
  | { outcome: "authenticate"; block: AdmissionBlock | null }
  | { outcome: "anonymous"; block: AdmissionBlock }
  | { outcome: "deny"; block: AdmissionBlock }
  | { outcome: "reject"; block: AdmissionBlock; status: number; message?: string };

export function decideAdmission(
  blocks: readonly AdmissionBlock[],
  facts: AdmissionRequest,
): AdmissionDecision {
  const block = evaluateChain(blocks, facts);
  if (block === null || block.action === "continue") return { outcome: "authenticate", block };
  if (block.action === "deny") return { outcome: "deny", block };
  if (block.action === "allow-anonymous") {
    // Anonymous writes are never admitted (SPEC Authentication 6): config validation refuses a
    // block listing a write method, and a block without a method list admits only reads; any
    // other request it matches goes on to authentication, which refuses it unsigned. A signed
    // request is always authenticated: a signature is checked, never ignored.
    if (facts.signed || !ANONYMOUS_METHODS.includes(facts.method)) {
      return { outcome: "authenticate", block };
    }
    return { outcome: "anonymous", block };
  }
  return {
    outcome: "reject",
    block,
    status: block.action.status,
    message: block.action.message,
  };
}

/** Query parameters a plain GetObject/HeadObject may carry (`x-id` is added by AWS SDKs). */
const READ_PARAMS = new Set(["versionId", "partNumber", "x-id"]);
const LIST_PARAMS = new Set([
  "list-type",
  "prefix",
  "delimiter",
  "max-keys",
  "continuation-token",
  "start-after",
  "encoding-type",
  "fetch-owner",
  "marker",
  "x-id",
]);

/** The parts of a request its kind depends on. */
export interface KindFacts {
  method: string;
  bucket: string | null;
  key: string | null;
  query: URLSearchParams;
}

export function requestKindOf(request: KindFacts): RequestKind {
  const names = [...request.query.keys()];
  if (request.bucket === null) return "other";
  if (request.key !== null) {
    const read = request.method === "GET" || request.method === "HEAD";
    const plain = names.every((name) => READ_PARAMS.has(name) || name.startsWith("response-"));
    return read && plain ? "object-read" : "other";
  }
  return request.method === "GET" && names.every((name) => LIST_PARAMS.has(name))
    ? "listing"
    : "other";
}
