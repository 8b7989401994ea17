// The objects room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { CompletedUploads } from "./multipart/completed-uploads.ts";
export { MultipartService } from "./multipart/multipart-service.ts";
export { MultipartStore } from "./multipart/multipart-store.ts";
export { partRange } from "./multipart/part-layout.ts";
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
