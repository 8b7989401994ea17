// The body room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { BodyDigest, tooLarge } from "./body-digest.ts";
export { validateContentMd5 } from "./checksums/content-md5.ts";
export { readFormData } from "./form-data.ts";
export type { FormField, FormFile } from "./form-data.ts";
export { formBoundary, malformedForm } from "./form-part-headers.ts";
export { ReplayBodyCheck, replayBodyCheck } from "./replay-body-check.ts";
export { uploadBody } from "./request-body.ts";
