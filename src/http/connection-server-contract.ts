/**
 * What the listener promises the runtime, whichever way it serves: its own accept loop
 * (connection-server.ts) or, on a Deno without a per-connection server, `Deno.serve` restarted
 * after an accept error (serve-fallback.ts).
 */
import type { ConnectionLimits, ConnectionTable } from "./connection-table.ts";

export type ServeHandler = (
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

export interface ConnectionServerOptions {
  hostname: string;
  port: number;
  handler: ServeHandler;
  /** Read on every accept and sweep, so a reload applies to the next one. */
  limits: () => ConnectionLimits;
  /** Serve HTTPS with this PEM certificate and key (http/tls-material.ts); absent = HTTP. */
  tls?: { cert: string; key: string };
  /** Tests force the fallback path with true. */
  useFallback?: boolean;
}

export interface ConnectionServer {
  addr: Deno.NetAddr;
  /** Settles once `shutdown` has finished; never because of a client. */
  finished: Promise<void>;
  /** Stops accepting, lets requests in flight finish, then closes every connection. */
  shutdown(): Promise<void>;
  /** Open connections, closes by reason, refusals (null on the fallback path). */
  stats(): ConnectionStats | null;
}

export interface ConnectionStats {
  open: number;
  closed: ConnectionTable["closed"];
  refused: number;
}
