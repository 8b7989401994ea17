// The objects room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { verifyDeltas } from "./diagnostics/delta-verify.ts";
export type { VerifyReport, VerifyRequest } from "./diagnostics/delta-verify.ts";
export { EfficiencyReports } from "./diagnostics/efficiency-cache.ts";
export { GRADE_SCALE, scanBucketEfficiency, totalsOf } from "./diagnostics/efficiency-report.ts";
export type { BucketEfficiency } from "./diagnostics/efficiency-report.ts";
export type { DeltaDecoder, RawBackend } from "./diagnostics/object-checks.ts";
export type { BucketProgress, ScrubState } from "./diagnostics/scrub-state.ts";
export { Scrubber } from "./diagnostics/scrub.ts";
export { CompletedUploads } from "./multipart/completed-uploads.ts";
export { MultipartService } from "./multipart/multipart-service.ts";
export { MultipartStore } from "./multipart/multipart-store.ts";
export { partRange } from "./multipart/part-layout.ts";
export { uploadStores } from "./multipart/routed-uploads.ts";
export { ObjectService } from "./object-service.ts";
export { scanDeltaspaceSavings } from "./usage/deltaspace-savings.ts";
export type { DeltaspaceSavings, SavingsReport } from "./usage/deltaspace-savings.ts";
export { UsageFlusher } from "./usage/usage-flusher.ts";
export { FullUsageScan } from "./usage/usage-full-scan.ts";
export type { ScanSource } from "./usage/usage-scan.ts";
export { UsageCounter } from "./usage/usage.ts";
export type { BucketUsage, ScanTrigger } from "./usage/usage.ts";
export type { WriteContext, WriteObserver, WriteOperation } from "./usage/write-observer.ts";
export type { ClientMetadata, WritePrecondition } from "./write-options.ts";
