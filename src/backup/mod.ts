// The backup room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { openBackup, writeBackup } from "./backup-archive.ts";
export { MIN_PASSWORD_LENGTH } from "./backup-crypto.ts";
export { backupParts, CONFIG_PART, importFromLegacyJson, importFromParts } from "./backup-parts.ts";
export type { IamImport } from "./backup-parts.ts";
export { BackupFormatError } from "./backup-zip.ts";
export { importIam } from "./iam-import.ts";
