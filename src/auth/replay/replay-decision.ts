/**
 * What replay detection decided about a request it lets run, as plain data handed to the
 * operation (Authenticator.execute passes it to the work it runs).
 *
 * Most runs carry no decision: a first execution, or a request replay detection does not cover.
 * A repeat of PutObject/UploadPart whose body the signature does not pin (UNSIGNED-PAYLOAD, an
 * unsigned trailer) carries a body comparison: the operation stages the body, compares its MD5
 * with the first answer's ETag, and never commits it (body/replay-body-check.ts builds that from
 * this). The verdict is written back here, because the guard must tell "same body: the first
 * answer" from "another body: refused" whatever error the storage layers made of the abort.
 */

export type BodyVerdict = "pending" | "same" | "different";

export interface ReplayBodyComparison {
  /** Hex MD5 of the body the first execution stored (its ETag). */
  readonly expectedMd5: string;
  /** "pending" until the staged body ended; then whether it was the first one's. */
  verdict: BodyVerdict;
}

export interface ReplayDecision {
  /** Set on a repeat whose object body must be compared with the first's before commit. */
  readonly compareBody?: ReplayBodyComparison;
}

/** The decision of a run that needs nothing special: a first execution, or not covered. */
export const RUN_AS_SENT: ReplayDecision = Object.freeze({});
