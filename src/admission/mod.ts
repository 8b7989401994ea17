// The admission room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { admissionChainSource } from "./build.ts";
export type { AdmissionChain } from "./build.ts";
export type { AdmissionRequest, RequestKind } from "./chain.ts";
export { decideAdmission, requestKindOf } from "./decide.ts";
export { compareBytes, rangeBefore, rollUp, scanRanges, wholeBucket } from "./public-prefix.ts";
export { traceAdmission, TraceInputError } from "./trace.ts";
export type { TraceInput } from "./trace.ts";
