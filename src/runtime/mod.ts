// The runtime room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { DataDirectoryInUse, lockDataDirectories } from "./data-dir-lock.ts";
export { checkBackendSettings } from "./open-backend.ts";
export { openSvc } from "./open-svc.ts";
export { reloadOnHangup } from "./reload.ts";
export { startServer } from "./server.ts";
export { checkStartupAuth, StartupError } from "./startup-checks.ts";
export { processClock, TEST_CLOCK_VARIABLE, testClockOffsetSecs } from "./test-clock.ts";
