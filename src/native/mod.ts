// The native room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { cJoinedPath, cPath } from "./c-path.ts";
export { raiseOpenFileLimit } from "./fd-limit.ts";
export { lstatNoThrow, withRegularFile } from "./fd-read.ts";
export { tryLockFile } from "./file-lock.ts";
export { ENTRY_DIRECTORY, ENTRY_FILE, readDirectoryEntries } from "./fs-read-dir.ts";
export { DIRECTORY, leanLstat, leanLstatC, leanSize, REGULAR_FILE } from "./lean-stat.ts";
export { createChunkMac } from "./libcrypto/chunk-mac.ts";
export type { ChunkMac } from "./libcrypto/chunk-mac.ts";
export { createBackgroundHasher, createHasher } from "./libcrypto/native-hash.ts";
export type { BackgroundHasher, HashAlgorithm, Hasher } from "./libcrypto/native-hash.ts";
export { loadOpenSsl, OpenSslGcm } from "./libcrypto/openssl-gcm.ts";
export { tuneMallocForStreaming } from "./malloc-tuning.ts";
export { nativeComplete, nativeReport } from "./native-report.ts";
export { exchangePaths } from "./rename-exchange.ts";
export {
  assertXattrSupport,
  getJsonXattr,
  lookupXattr,
  lookupXattrTextC,
  removeXattr,
  setJsonXattr,
  XattrError,
} from "./xattr.ts";
