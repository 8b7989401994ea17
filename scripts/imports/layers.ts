// The layers of svc: which room (a folder under src/) may import which. A room may import itself
// and the rooms listed for it, nothing else; the list is the whole design of the dependency
// graph, and docs/ARCHITECTURE.md shows it (scripts/check-imports.ts keeps the two equal).
//
// Rooms are listed bottom up: a room's list names only rooms above it in this table, so the room
// graph is acyclic by construction (the check verifies that too).

/** What every room above the foundations may use. */
const FOUNDATION = ["lib", "native", "observability", "config"] as const;
/** The data path below the S3 surface. */
const DATA = [...FOUNDATION, "http", "storage", "delta", "iam", "db"] as const;
/** Everything the S3 surface may use. */
const S3_BELOW = [...DATA, "admission", "auth", "body", "objects", "events"] as const;
/** Everything the admin API may use. */
const ADMIN_BELOW = [...S3_BELOW, "backup", "jobs", "s3", "ui"] as const;

export const LAYERS: Record<string, readonly string[]> = {
  native: [],
  lib: ["native"],
  observability: ["lib"],
  config: ["lib", "observability"],
  http: FOUNDATION,
  storage: FOUNDATION,
  delta: [...FOUNDATION, "storage"],
  iam: ["lib", "observability", "config", "http"],
  db: [...FOUNDATION, "storage", "iam"],
  admission: ["lib", "observability", "config", "http"],
  auth: [...FOUNDATION, "http", "iam"],
  body: [...FOUNDATION, "http", "auth"],
  objects: [...FOUNDATION, "storage", "delta", "db", "body"],
  events: ["lib", "observability", "config", "storage", "db", "objects"],
  backup: ["lib", "observability", "config", "iam", "db"],
  jobs: [...DATA, "objects", "events"],
  s3: S3_BELOW,
  ui: ["lib"],
  admin: ADMIN_BELOW,
  runtime: [...ADMIN_BELOW, "admin"],
  cli: ["lib", "observability", "config", "http", "admission"],
};

/** What the entry point (main.ts) may import. */
export const ENTRY_IMPORTS: readonly string[] = [
  "lib",
  "native",
  "observability",
  "config",
  "runtime",
  "cli",
];

/** Test support: imported by tests only, never by the production graph. It may import anything. */
export const TESTING_ROOM = "testing";

/** Files outside src/ that production code may import (the UI's page list, shared with the UI). */
export const SHARED_OUTSIDE_SRC: readonly string[] = ["ui/src/page-names.ts"];
