// The events room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { openEventOutbox } from "./event-outbox.ts";
export type { EventOutbox } from "./event-outbox.ts";
export { deletedEvent } from "./event.ts";
export type { ObjectEvent } from "./event.ts";
export { OUTBOX_STATUSES, OutboxStore } from "./outbox-store.ts";
export type { OutboxRow, OutboxStatus } from "./outbox-store.ts";
