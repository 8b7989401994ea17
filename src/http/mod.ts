// The http room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export type { ConnectionStats } from "./connection-server-contract.ts";
export { serveConnections } from "./connection-server.ts";
export { addressMatcher } from "./ip-match.ts";
export { permissiveCors } from "./permissive-cors.ts";
export { readBounded } from "./read-bounded.ts";
export { parseRequestContext, splitRawUrl } from "./request-context.ts";
export type { RequestContext } from "./request-context.ts";
export { watchForStalls } from "./stall-watch.ts";
export { loadTlsMaterial } from "./tls-material.ts";
