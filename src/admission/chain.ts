/**
 * The admission chain: an ordered list of blocks evaluated before authentication, first match
 * wins. Operator blocks (`admission.blocks`) come first, then one synthesized
 * `public-prefix:<bucket>` block per bucket with public prefixes. A request no block matches
 * goes on to authentication, as if a block had answered `continue`.
 */
import { coveredByAny } from "./public-prefix.ts";

export type AdmissionAction =
  | "allow-anonymous"
  | "deny"
  | "continue"
  | { type: "reject"; status: number; message?: string };

/** What a request does, for predicates that care about more than its method. */
export type RequestKind =
  /** GetObject or HeadObject of one key (no subresource). */
  | "object-read"
  /** ListObjects or ListObjectsV2 (no subresource). */
  | "listing"
  | "other";

/** The facts a block can match on, known before authentication. */
export interface AdmissionRequest {
  method: string;
  bucket: string | null;
  key: string | null;
  kind: RequestKind;
  /** Carries a signature (header, presigned query or POST form); not yet verified. */
  signed: boolean;
  clientIp?: string;
}

/** AND of predicates; an absent predicate matches everything. */
export interface AdmissionMatch {
  /** Upper-case methods. */
  methods?: readonly string[];
  bucket?: string;
  /**
   * Object reads of a covered key, and listings (whose entries are then filtered to the same
   * prefixes). Every other request, bucket-level ones included, does not match.
   */
  publicPrefixes?: readonly string[];
  /** Tested against the full key; bucket-level requests do not match. */
  key?: (key: string) => boolean;
  /** true: signed requests only; false: unsigned only. */
  authenticated?: boolean;
  clientIp?: (ip: string) => boolean;
  /** A predicate that can never hold (an unknown or not yet supported config flag). */
  never?: boolean;
}

export interface AdmissionBlock {
  name: string;
  match: AdmissionMatch;
  action: AdmissionAction;
}

export function blockMatches(match: AdmissionMatch, request: AdmissionRequest): boolean {
  if (match.never) return false;
  if (match.methods !== undefined && !match.methods.includes(request.method)) return false;
  if (match.bucket !== undefined && match.bucket !== request.bucket) return false;
  if (match.authenticated !== undefined && match.authenticated !== request.signed) return false;
  if (match.key !== undefined && (request.key === null || !match.key(request.key))) return false;
  if (match.clientIp !== undefined) {
    if (request.clientIp === undefined || !match.clientIp(request.clientIp)) return false;
  }
  if (match.publicPrefixes !== undefined) {
    if (request.kind === "listing") return true;
    if (request.kind !== "object-read" || request.key === null) return false;
    return coveredByAny(request.key, match.publicPrefixes);
  }
  return true;
}

/** The first block matching `request`, or null when none does. */
export function evaluateChain(
  blocks: readonly AdmissionBlock[],
  request: AdmissionRequest,
): AdmissionBlock | null {
  return blocks.find((block) => blockMatches(block.match, request)) ?? null;
}
