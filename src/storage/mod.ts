// The storage room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { BackendHealth, bootProbe } from "./backend-health.ts";
export type { ProbeMode } from "./backend-health.ts";
export { STORED_HEADERS } from "./backend.ts";
export type {
  Backend,
  BucketEntry,
  ByteRange,
  DeleteCondition,
  ListOptions,
  ListPage,
  LocalExtent,
  ObjectBody,
  ObjectInfo,
  ObjectMeta,
  ScratchSealer,
  StagedObject,
  StorageKind,
  StoredHeader,
  WriteCondition,
} from "./backend.ts";
export { BucketRouter } from "./bucket-router.ts";
export { CompressingBackend } from "./compression/compressing-backend.ts";
export { stopFrameDecoder } from "./compression/frame-decoder.ts";
export { EncryptingBackend } from "./encryption/encrypting-backend.ts";
export type { DecryptFailure } from "./encryption/encryption-error.ts";
export { KeyRing } from "./encryption/key-ring.ts";
export { sseWriteHeaders } from "./encryption/sse-headers.ts";
export { FilesystemBackend } from "./fs/filesystem-backend.ts";
export { ObservedBackend } from "./observed-backend.ts";
export { decodePartSizes, encodePartSizes, MAX_LAYOUT_CHARS } from "./part-sizes.ts";
export { S3Backend } from "./s3/s3-backend.ts";
export { S3Client } from "./s3/s3-client.ts";
export { BackendError, svcErrorFromBackend } from "./s3/s3-errors.ts";
export { s3OptionsFromConfig } from "./s3/s3-options.ts";
export type { AdvancedS3, S3BackendConfig } from "./s3/s3-options.ts";
export { parseListBuckets, parseListObjects } from "./s3/s3-xml.ts";
export { isStoredDataDamage } from "./stored-damage.ts";
