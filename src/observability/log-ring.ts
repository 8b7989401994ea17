/**
 * In-memory rings behind the admin API's `/logs`, `/logs/stream` and `/audit`, and the field
 * redaction every log sink applies.
 *
 * `LogRing` keeps the newest `capacity` log lines at or above `minLevel` (SVC_LOG_RING_SIZE,
 * SVC_LOG_RING_LEVEL). Its minimum is independent of the output filter: with the defaults the
 * ring holds info and above whatever RUST_LOG says. Live-tail subscribers get matching entries
 * asynchronously, one at a time: when a subscriber's callback returns a promise the next entry
 * waits for it, and at most `maxQueue` entries wait per subscriber — beyond that the oldest
 * waiting entry is dropped and the count of drops is passed with the next delivered entry. A
 * callback that throws or rejects is unsubscribed.
 */
import { atLeast, type LogLevel } from "./log-level.ts";

/** A bounded buffer that keeps the newest `capacity` items, each with a monotonic id from 1. */
export class Ring<T> {
  readonly #items: (T | undefined)[];
  #next = 0;
  #size = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`ring capacity must be a positive integer, got ${capacity}`);
    }
    this.#items = new Array(capacity);
  }

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    this.#items[this.#next] = item;
    this.#next = (this.#next + 1) % this.capacity;
    if (this.#size < this.capacity) this.#size++;
  }

  /** Items newest first. */
  *newestFirst(): Generator<T> {
    for (let i = 1; i <= this.#size; i++) {
      yield this.#items[(this.#next - i + this.capacity) % this.capacity] as T;
    }
  }
}

// ---- redaction -------------------------------------------------------------------------------

/** An access key as it may appear in logs: the first four characters only. */
export function maskKey(key: string): string {
  return key.length <= 4 ? "****" : `${key.slice(0, 4)}****`;
}

export const REDACTED = "[redacted]";

const SECRET_WORD = /(secret|password|passwd|authorization|token|cookie)/;
const MASKED_NAMES = new Set(["access_key", "access_key_id", "accesskey", "accesskeyid"]);
/** `*_key` names that are object keys, not key material. */
const OBJECT_KEY_NAMES = new Set(["object_key", "source_key", "dest_key", "destination_key"]);

function normalizeName(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/-/g, "_").toLowerCase();
}

/**
 * How a field named `name` is shown: `mask` (access keys, through maskKey), `redact` (secrets,
 * passwords, authorization, tokens, cookies, and `key` or any `*_key` but object keys), or
 * `show`. Names are compared case-insensitively, camelCase and kebab-case as snake_case.
 */
export function fieldTreatment(name: string): "mask" | "redact" | "show" {
  const n = normalizeName(name);
  if (MASKED_NAMES.has(n)) return "mask";
  if (SECRET_WORD.test(n)) return "redact";
  if (n === "key" || (n.endsWith("_key") && !OBJECT_KEY_NAMES.has(n))) return "redact";
  return "show";
}

const MAX_DEPTH = 4;
const MAX_ITEMS = 50;
const MAX_STRING = 8192;

function sanitizeValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
      return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "undefined":
      return null;
    case "function":
    case "symbol":
      return String(value);
  }
  if (value === null) return null;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (ArrayBuffer.isView(value)) return `<${value.byteLength} bytes>`;
  if (depth >= MAX_DEPTH) return "[…]";
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((item) => sanitizeValue(item, depth + 1));
    if (value.length > MAX_ITEMS) items.push(`…${value.length - MAX_ITEMS} more`);
    return items;
  }
  if (value instanceof Map) return redactFields(Object.fromEntries(value), depth + 1);
  if (value instanceof Set) return sanitizeValue([...value], depth);
  return redactFields(value as Record<string, unknown>, depth + 1);
}

/**
 * A JSON-safe copy of `fields` with secrets redacted and access keys masked, at every nesting
 * level. Undefined values are dropped; errors become `Name: message`; byte arrays their length.
 */
export function redactFields(
  fields: Record<string, unknown>,
  depth = 0,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let count = 0;
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (++count > MAX_ITEMS) {
      out["…"] = `${Object.keys(fields).length - MAX_ITEMS} more fields`;
      break;
    }
    const treatment = fieldTreatment(name);
    if (value === null) out[name] = null;
    else if (treatment === "redact") out[name] = REDACTED;
    else if (treatment === "mask") {
      out[name] = typeof value === "string" ? maskKey(value) : REDACTED;
    } else out[name] = sanitizeValue(value, depth);
  }
  return out;
}

// ---- log ring --------------------------------------------------------------------------------

export interface LogEntry {
  /** Monotonic per ring, from 1. */
  id: number;
  /** ISO 8601 UTC. */
  time: string;
  level: LogLevel;
  /** `svc::area` form. */
  target: string;
  message: string;
  /** Already redacted. */
  fields: Record<string, unknown>;
}

export interface LogFilterQuery {
  /** Minimum severity. */
  level?: LogLevel;
  /** Target prefix, e.g. `svc::s3`. */
  target?: string;
  /** Case-insensitive substring of the message or the fields (as JSON). */
  q?: string;
  /** Only entries with a larger id (resuming a tail). */
  after?: number;
}

export interface LogQuery extends LogFilterQuery {
  /** At most this many entries (default and maximum: the ring capacity). */
  limit?: number;
}

/** Called with a matching entry and how many entries were dropped for this subscriber since. */
export type LogSubscriber = (entry: LogEntry, dropped: number) => void | Promise<void>;

interface Stored {
  entry: LogEntry;
  haystack?: string;
}

function haystackOf(stored: Stored): string {
  stored.haystack ??= `${stored.entry.message}\n${JSON.stringify(stored.entry.fields)}`
    .toLowerCase();
  return stored.haystack;
}

function matches(stored: Stored, filter: LogFilterQuery, q: string | undefined): boolean {
  const { entry } = stored;
  if (filter.after !== undefined && entry.id <= filter.after) return false;
  if (filter.level && !atLeast(entry.level, filter.level)) return false;
  if (filter.target && !entry.target.startsWith(filter.target)) return false;
  if (q && !haystackOf(stored).includes(q)) return false;
  return true;
}

class Subscription {
  readonly #queue: LogEntry[] = [];
  #dropped = 0;
  #pumping = false;
  active = true;

  constructor(
    readonly filter: LogFilterQuery,
    readonly q: string | undefined,
    readonly onEntry: LogSubscriber,
    readonly maxQueue: number,
    readonly remove: () => void,
  ) {}

  offer(entry: LogEntry): void {
    if (this.#queue.length >= this.maxQueue) {
      this.#queue.shift();
      this.#dropped++;
    }
    this.#queue.push(entry);
    if (!this.#pumping) {
      this.#pumping = true;
      queueMicrotask(() => void this.#pump());
    }
  }

  get queued(): number {
    return this.#queue.length;
  }

  async #pump(): Promise<void> {
    try {
      while (this.active && this.#queue.length > 0) {
        const entry = this.#queue.shift()!;
        const dropped = this.#dropped;
        this.#dropped = 0;
        const result = this.onEntry(entry, dropped);
        if (result instanceof Promise) await result;
      }
    } catch {
      this.remove();
    } finally {
      this.#pumping = false;
    }
  }
}

export interface LogRingOptions {
  /** Entries kept (SVC_LOG_RING_SIZE); default 2000. */
  capacity?: number;
  /** Lowest level kept (SVC_LOG_RING_LEVEL); default info. */
  minLevel?: LogLevel;
  /** Entries waiting per live-tail subscriber before the oldest is dropped; default 256. */
  maxQueue?: number;
}

export class LogRing {
  readonly capacity: number;
  readonly minLevel: LogLevel;
  readonly #ring: Ring<Stored>;
  readonly #subscribers = new Set<Subscription>();
  readonly #maxQueue: number;
  #lastId = 0;

  constructor(options: LogRingOptions = {}) {
    this.capacity = options.capacity ?? 2000;
    this.minLevel = options.minLevel ?? "info";
    this.#maxQueue = Math.max(1, options.maxQueue ?? 256);
    this.#ring = new Ring(this.capacity);
  }

  get size(): number {
    return this.#ring.size;
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** Whether a line of this level would be kept. */
  accepts(level: LogLevel): boolean {
    return atLeast(level, this.minLevel);
  }

  /**
   * Adds a line (its fields already redacted) and hands it to matching subscribers; null when
   * below `minLevel`.
   */
  push(line: Omit<LogEntry, "id">): LogEntry | null {
    if (!this.accepts(line.level)) return null;
    const entry: LogEntry = { id: ++this.#lastId, ...line };
    const stored: Stored = { entry };
    this.#ring.push(stored);
    for (const subscriber of this.#subscribers) {
      if (matches(stored, subscriber.filter, subscriber.q)) subscriber.offer(entry);
    }
    return entry;
  }

  /** Matching entries, newest first. */
  query(query: LogQuery = {}): LogEntry[] {
    const limit = Math.min(query.limit ?? this.capacity, this.capacity);
    const q = query.q ? query.q.toLowerCase() : undefined;
    const out: LogEntry[] = [];
    if (limit <= 0) return out;
    for (const stored of this.#ring.newestFirst()) {
      if (!matches(stored, query, q)) continue;
      out.push(stored.entry);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Live tail of entries pushed from now on that match `filter`; returns the unsubscribe. */
  subscribe(filter: LogFilterQuery, onEntry: LogSubscriber): () => void {
    const q = filter.q ? filter.q.toLowerCase() : undefined;
    const subscription: Subscription = new Subscription(
      { ...filter },
      q,
      onEntry,
      this.#maxQueue,
      () => unsubscribe(),
    );
    const unsubscribe = () => {
      subscription.active = false;
      this.#subscribers.delete(subscription);
    };
    this.#subscribers.add(subscription);
    return unsubscribe;
  }
}
