// The layers of svc: which room (a folder under src/) may import which. A room may import itself
// and the rooms listed for it, nothing else; the list is the whole design of the dependency
// graph, and docs/ARCHITECTURE.md shows it (scripts/check-imports.ts keeps the two equal).
//
// Rooms are listed bottom up: a room's list names only rooms above it in this table, so the room
// graph is acyclic by construction (the check verifies that too).

export const LAYERS: Record<string, readonly string[]> = {
  native: [],
  lib: ["native"],
  observability: ["lib"],
  config: ["lib", "observability"],
  http: ["lib", "native", "observability", "config"],
  storage: ["lib", "native", "observability", "config"],
  delta: ["lib", "native", "observability", "config", "storage"],
  iam: ["lib", "observability", "config", "http"],
  db: ["lib", "native", "observability", "config", "storage", "iam"],
  admission: ["lib", "observability", "config", "http"],
  auth: ["lib", "native", "observability", "config", "http", "iam"],
  body: ["lib", "native", "observability", "config", "http", "auth"],
  objects: ["lib", "native", "observability", "config", "storage", "delta", "db", "body"],
  events: ["lib", "observability", "config", "storage", "db", "objects"],
  backup: ["lib", "observability", "config", "iam", "db"],
  jobs: [
    "lib",
    "native",
    "observability",
    "config",
    "http",
    "storage",
    "delta",
    "iam",
    "db",
    "objects",
    "events",
  ],
  s3: [
    "lib",
    "native",
    "observability",
    "config",
    "http",
    "storage",
    "delta",
    "iam",
    "db",
    "admission",
    "auth",
    "body",
    "objects",
    "events",
  ],
  ui: ["lib"],
  admin: [
    "lib",
    "native",
    "observability",
    "config",
    "http",
    "storage",
    "delta",
    "iam",
    "db",
    "admission",
    "auth",
    "body",
    "objects",
    "events",
    "backup",
    "jobs",
    "s3",
    "ui",
  ],
  runtime: [
    "lib",
    "native",
    "observability",
    "config",
    "http",
    "storage",
    "delta",
    "iam",
    "db",
    "admission",
    "auth",
    "body",
    "objects",
    "events",
    "backup",
    "jobs",
    "s3",
    "ui",
    "admin",
  ],
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
