// The s3 room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export type { S3Access } from "./access.ts";
export { bucketPolicySource } from "./bucket-policy.ts";
export { createS3Handler } from "./handler.ts";
export type { ActingAs, S3Handler } from "./handler.ts";
export { iamS3Access } from "./iam-access.ts";
export { errorResponse } from "./response.ts";
export { BucketWriteGate } from "./write-gate.ts";
export { childrenNamed, childText, parseXml } from "./xml.ts";
