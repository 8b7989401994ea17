/**
 * The open client connections, in order of last activity, with the rules that keep a stranger
 * from holding them: a cap (the connection idle longest is closed to make room), a deadline for
 * the first request head of a new connection, and an idle timeout between requests.
 *
 * The runtime parses HTTP, so svc never sees the bytes of a request head: "idle" means no request
 * in flight. A client trickling a head counts as idle, and so is closed by the head deadline on a
 * new connection, by the idle timeout on a reused one, or first when room is needed.
 */

export interface ConnectionLimits {
  /** Most connections open at once. */
  maxConnections: number;
  /** From accept to the first request head. */
  headerTimeoutMs: number;
  /** Between two requests on one connection. */
  idleTimeoutMs: number;
}

/**
 * One accepted connection. `close` ends it; it is only called while idle, and `deferred` asks to
 * wait for the current task to finish first (the answer that made it idle is still being sent).
 */
export interface TrackedConnection {
  /** Requests whose response has not been delivered yet. */
  inFlight: number;
  /** Requests seen so far. */
  served: number;
  /** When the connection last became idle (accept time for a new one), ms. */
  idleSince: number;
  /** Set once `close` was called or the connection ended. */
  closing: boolean;
  /** Close once the response in flight has been delivered (its request body was left unread). */
  closeWhenIdle: boolean;
  close(deferred: boolean): void;
}

export type CloseReason = "capacity" | "header_timeout" | "idle_timeout" | "unread_body";

export class ConnectionTable {
  /** Insertion order = least recently active first (a connection moves to the end on activity). */
  readonly #open = new Set<TrackedConnection>();
  #closing = 0;
  readonly closed: Record<CloseReason, number> = {
    capacity: 0,
    header_timeout: 0,
    idle_timeout: 0,
    unread_body: 0,
  };
  /** Connections refused because every open one had a request in flight. */
  refused = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Connections open and not being closed. */
  get size(): number {
    return this.#open.size - this.#closing;
  }

  /**
   * Makes room for one more connection under `max`: closes the connections idle longest. False
   * when every open connection has a request in flight (the caller refuses the new one).
   */
  makeRoom(max: number): boolean {
    while (this.size >= max) {
      if (!this.closeOldestIdle("capacity")) return false;
    }
    return true;
  }

  /** Closes the connection idle longest; false when none is idle. */
  closeOldestIdle(reason: CloseReason): boolean {
    for (const connection of this.#open) {
      if (connection.inFlight === 0 && !connection.closing) {
        this.#close(connection, reason);
        return true;
      }
    }
    return false;
  }

  add(connection: TrackedConnection): void {
    this.#open.add(connection);
  }

  /** The connection has ended (by either side). */
  remove(connection: TrackedConnection): void {
    if (!this.#open.delete(connection)) return;
    if (connection.closing) this.#closing--;
    connection.closing = true;
  }

  requestStarted(connection: TrackedConnection): void {
    connection.inFlight++;
    connection.served++;
    this.#touch(connection);
  }

  /** The response has been delivered (or abandoned). */
  requestEnded(connection: TrackedConnection): void {
    connection.inFlight = Math.max(0, connection.inFlight - 1);
    if (connection.inFlight > 0) return;
    connection.idleSince = this.now();
    this.#touch(connection);
    if (connection.closeWhenIdle) this.#close(connection, "unread_body");
  }

  /** Closes idle connections past their deadline; called about once a second. */
  sweep(limits: ConnectionLimits): void {
    const now = this.now();
    for (const connection of this.#open) {
      if (connection.inFlight > 0 || connection.closing) continue;
      const fresh = connection.served === 0;
      const limit = fresh ? limits.headerTimeoutMs : limits.idleTimeoutMs;
      if (now - connection.idleSince >= limit) {
        this.#close(connection, fresh ? "header_timeout" : "idle_timeout");
      }
    }
  }

  /** Every open connection, for shutdown. */
  all(): TrackedConnection[] {
    return [...this.#open];
  }

  #touch(connection: TrackedConnection): void {
    if (!this.#open.has(connection)) return;
    this.#open.delete(connection);
    this.#open.add(connection);
  }

  #close(connection: TrackedConnection, reason: CloseReason): void {
    if (connection.closing) return;
    connection.closing = true;
    if (this.#open.has(connection)) this.#closing++;
    this.closed[reason]++;
    connection.close(reason === "unread_body");
  }
}
