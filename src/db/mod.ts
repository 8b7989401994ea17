// The db room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { ConfigDb, openConfigDb } from "./config-db.ts";
export type { DbClient, DbState } from "./config-db.ts";
export { ConfigSync } from "./config-sync.ts";
export type { ConfigSyncDeps } from "./config-sync.ts";
export { COOKIE_KEY_LABEL, deriveKey } from "./db-key.ts";
export { ExtAuthStore } from "./ext-auth-store.ts";
export { IamReconciler } from "./iam-reconciler.ts";
export { bumpVersion, insertGroupRow, insertUserRow, one } from "./iam-rows.ts";
export { IamStore } from "./iam-store.ts";
export { SessionStore } from "./session-store.ts";
export type { SessionRecord } from "./session-store.ts";
export { UsageStore } from "./usage-store.ts";
export type { UsageRow } from "./usage-store.ts";
