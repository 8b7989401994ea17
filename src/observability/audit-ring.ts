/**
 * The audit ring behind `GET /_/audit`: the newest SVC_AUDIT_RING_SIZE (default 500)
 * security-relevant events — `auth_failure`, `replay_rejected`, `lockout`, `config_changed`,
 * `iam_reconcile_*` and the like — newest first. Fields are redacted like log fields. Every
 * recorded event is also handed to `log` (configureLogging wires it to the `svc::audit` target,
 * so audit events reach the output and the log ring too).
 */
import type { LogLevel } from "./log-level.ts";
import { redactFields, Ring } from "./log-ring.ts";

export interface AuditEntry {
  /** Monotonic per ring, from 1. */
  id: number;
  /** ISO 8601 UTC. */
  time: string;
  event: string;
  level: LogLevel;
  /** Already redacted. */
  fields: Record<string, unknown>;
}

/** Where a recorded event is logged; receives the redacted fields. */
export type AuditLog = (level: LogLevel, event: string, fields: Record<string, unknown>) => void;

/**
 * Records an audit entry: what services receive instead of the ring itself (fields are redacted
 * by the ring; never pass a secret anyway).
 */
export type AuditFn = (event: string, fields: Record<string, unknown>, level?: LogLevel) => void;

export interface AuditRingOptions {
  /** Entries kept; default 500. */
  capacity?: number;
  /** Logs each recorded event; default: not logged. */
  log?: AuditLog;
  /** Clock, for tests. */
  now?: () => number;
}

export class AuditRing {
  readonly capacity: number;
  readonly #ring: Ring<AuditEntry>;
  readonly #log: AuditLog | undefined;
  readonly #now: () => number;
  #lastId = 0;

  constructor(options: AuditRingOptions = {}) {
    this.capacity = options.capacity ?? 500;
    this.#ring = new Ring(this.capacity);
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#ring.size;
  }

  /** Records an event (WARN unless told otherwise) and logs it. */
  record(
    event: string,
    fields: Record<string, unknown> = {},
    level: LogLevel = "warn",
  ): AuditEntry {
    const entry: AuditEntry = {
      id: ++this.#lastId,
      time: new Date(this.#now()).toISOString(),
      event,
      level,
      fields: redactFields(fields),
    };
    this.#ring.push(entry);
    this.#log?.(level, event, entry.fields);
    return entry;
  }

  /** The newest `limit` entries (default: all kept), newest first. */
  snapshot(limit?: number): AuditEntry[] {
    const max = Math.min(limit ?? this.capacity, this.capacity);
    const out: AuditEntry[] = [];
    if (max <= 0) return out;
    for (const entry of this.#ring.newestFirst()) {
      out.push(entry);
      if (out.length >= max) break;
    }
    return out;
  }
}
