// The cli room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { runAdminCommand } from "./admin/admin-command.ts";
export { runAdmissionCommand } from "./admission-command.ts";
export { runConfigCommand } from "./config-command.ts";
export { formatVersion, versionInfo } from "./version-info.ts";
