// The delta room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { decodeTransformed, deriveTokenForm } from "./archive-form.ts";
export { shutdownArchiveWorkers } from "./archive/archive-codec.ts";
export { ArchiveBacklog } from "./background/archive-backlog.ts";
export type { BacklogHooks } from "./background/archive-backlog.ts";
export { ReferenceCache } from "./cache/reference-cache.ts";
export { CodecSet, decodedSizeOf } from "./codec/codec-choice.ts";
export { CodecPool } from "./codec/codec-pool.ts";
export { probeXdelta3 } from "./codec/codec-process.ts";
export { Xdelta3Codec } from "./codec/codec.ts";
export { probeZstd, ZstdCodec } from "./codec/zstd-codec.ts";
export { DeltaBackend } from "./delta-backend.ts";
export { baselineFolderOf } from "./delta-context.ts";
export type { DeltaObserver, DeltaSettings } from "./delta-context.ts";
export { isNewerStored } from "./fleet/stored-order.ts";
export { deltaspaceOf, logicalKeyOf, REFERENCE_NAME, referenceNameFor } from "./layout.ts";
export { MetadataCache } from "./metadata-cache.ts";
