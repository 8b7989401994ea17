// The lib room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { bucketNameProblem } from "./bucket-names.ts";
export { fsyncDirectoryNow, syncDirectory } from "./dir-sync.ts";
export { diskFullError, isNoSpaceError, SvcError, toSvcError } from "./errors.ts";
export type { ErrorCode } from "./errors.ts";
export {
  bytesStream,
  emptyStream,
  fileRangeStream,
  openIfUnchanged,
  readRangeSync,
  SMALL_BODY_BYTES,
  writeAll,
  writeStreamToFile,
} from "./file-streams.ts";
export { globMatcher, keyGlobMatcher } from "./glob.ts";
export { deepEqual, isPlainObject, jsonDepthOver, MAX_JSON_DEPTH } from "./json-value.ts";
export { KeyLock } from "./key-lock.ts";
export { commonPrefixOf, compareUtf8 } from "./key-order.ts";
export { dotSegmentOf } from "./key-segments.ts";
export { mapConcurrent } from "./map-concurrent.ts";
export { pathExists } from "./path-exists.ts";
export { removeInterruptedWrites, writePrivateFile } from "./private-file.ts";
export {
  isLent,
  lendChunk,
  READ_BUFFER_BYTES,
  recycleChunk,
  takeReadBuffer,
} from "./read-buffers.ts";
export { Semaphore } from "./semaphore.ts";
export { VERSION } from "./version.ts";
export { withTimeout } from "./with-timeout.ts";
