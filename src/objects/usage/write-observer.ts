/**
 * Observers of the object service's writes: told about every committed write and every removed
 * object, with the object a commit replaced (usage counters need the difference). They are
 * called under the key lock, so changes to one key arrive in order. An observer that makes the
 * change durable elsewhere (the event outbox) returns a promise: the write does not return to
 * its caller (an S3 answer, a job's next step) before it resolves.
 */
import type { ObjectInfo } from "../../storage/mod.ts";

/** The S3 operation behind a write, as events name it. */
export type WriteOperation =
  | "put"
  | "post"
  | "copy"
  | "complete_multipart"
  | "delete"
  | "delete_objects"
  /** svc's own lifecycle rules (expiry, transition, retain-newest; jobs/lifecycle/). */
  | "lifecycle"
  /** A replication rule copying or deleting at its destination (jobs/replication/). */
  | "replication";

/**
 * Who caused a write and through which request: handed from the S3 handlers through the object
 * service to the observers (the event outbox records it). Absent for writes svc makes itself.
 */
export interface WriteContext {
  operation: WriteOperation;
  /** The principal's name; null for anonymous or open access. */
  principal: string | null;
  sourceIp: string | null;
  requestId: string | null;
  /**
   * A removal whose events the caller journaled before removing (jobs/lifecycle/, through the
   * outbox writer): the outbox moves that entry's events instead of making its own.
   */
  journal?: number;
}

export interface WriteObserver {
  /** Whether changes to this bucket are wanted; untracked buckets cost no extra metadata read. */
  tracks(bucket: string): boolean;
  /**
   * false when `committed` never looks at `replaced`: with no observer needing it, a write skips
   * the metadata read that finds it (and gets null). Absent means true.
   */
  readonly needsReplaced?: boolean;
  /**
   * `replaced` is the object the commit overwrote, null for a new key. Must not throw; a promise
   * returned must not reject (the write waits for it).
   */
  committed(
    bucket: string,
    info: ObjectInfo,
    replaced: ObjectInfo | null,
    context?: WriteContext,
  ): void | Promise<void>;
  /** Must not throw; like `committed`'s, a promise returned must not reject. */
  removed(bucket: string, info: ObjectInfo, context?: WriteContext): void | Promise<void>;
}

export class WriteObservers {
  readonly #observers = new Set<WriteObserver>();

  /** Registers an observer; returns its unregistration. */
  add(observer: WriteObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** The observers that track `bucket` (empty, without allocation, when there are none). */
  of(bucket: string): readonly WriteObserver[] {
    if (this.#observers.size === 0) return NONE;
    return [...this.#observers].filter((observer) => observer.tracks(bucket));
  }

  /**
   * Runs `remove` (under the caller's key lock) and tells the observers what it removed; the
   * object is read first with `head`, and only when some observer tracks the bucket. Waits for
   * the observers' promises, or hands them to `recorded` (a caller removing many keys waits for
   * them all at once, before it answers).
   */
  async removal(
    bucket: string,
    head: () => Promise<ObjectInfo | null>,
    remove: () => Promise<boolean>,
    context?: WriteContext,
    recorded?: Promise<void>[],
  ): Promise<boolean> {
    const observers = this.of(bucket);
    if (observers.length === 0) return await remove();
    const existing = await head();
    const removed = await remove();
    if (removed && existing !== null) {
      const wait = durable(
        observers.map((observer) => observer.removed(bucket, existing, context)),
      );
      if (wait !== undefined && recorded !== undefined) recorded.push(wait);
      else await wait;
    }
    return removed;
  }
}

/** Waits for the promises among what observers returned (none: no wait, no allocation). */
export function durable(results: (void | Promise<void>)[]): Promise<void> | void {
  const waits = results.filter((result) => result !== undefined);
  if (waits.length > 0) return Promise.all(waits).then(() => {});
}

const NONE: readonly WriteObserver[] = [];

/** Whether some of `observers` needs the object a commit replaces. */
export function needReplaced(observers: readonly WriteObserver[]): boolean {
  return observers.some((observer) => observer.needsReplaced !== false);
}
