// The auth room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { Authenticator } from "./authenticator.ts";
export type { AuthOutcome } from "./authenticator.ts";
export { clientIp } from "./client-ip.ts";
export { OidcClient, OidcError, randomToken } from "./oidc.ts";
export { verifyPostPolicy } from "./post-policy.ts";
export type { LengthRange } from "./post-policy.ts";
export type { ReplayBodyComparison, ReplayDecision } from "./replay/replay-decision.ts";
export { EMPTY_SHA256, hmacHex, signaturesEqual } from "./signing-key.ts";
export type { VerifiedRequest } from "./sigv4/sigv4-request.ts";
export { hexEqual, HmacKey, sha256HexOf } from "./small-sha256.ts";
