/**
 * The listener: svc accepts TCP connections itself and hands each one to the runtime's HTTP
 * server, so it can count, time out and close connections, which `Deno.serve` cannot do.
 *
 * Why not `Deno.serve`: in Deno 2.9.5 its accept loop ends on the first accept error, so running
 * out of descriptors (EMFILE) resolves `server.finished` with the error and the process exits;
 * it has no connection cap and no deadline for a request head (a connection trickling a head was
 * still open after 45 s, measured). What the runtime offers instead is internal:
 * `Deno[Deno.internal].serveHttpOnConnection(conn, signal, handler, onError, onListen)`, the
 * per-connection server `node:http` is built on, with the same HTTP engine and speed as
 * `Deno.serve` (hello world under wrk, same run: within the noise of each other). Aborting its
 * signal closes an idle connection at once; it is never aborted with a request in flight (that
 * left the connection open and the response unsent, measured), which is why only idle
 * connections are ever closed here. Where that internal is missing (another Deno), svc falls back
 * to `Deno.serve` restarted on the same port after an accept error (serve-fallback.ts).
 *
 * Accept errors never end the loop: it waits (100 ms, doubling to 2 s), closes the connection idle
 * longest to free a descriptor, and accepts again.
 */
import { getLogger } from "../observability/mod.ts";
import { guardProcessErrors } from "./process-guard.ts";
import { ConnectionTable, type TrackedConnection } from "./connection-table.ts";
import type {
  ConnectionServer,
  ConnectionServerOptions,
  ServeHandler,
} from "./connection-server-contract.ts";
import { serveWithRestart } from "./serve-fallback.ts";

const log = getLogger("svc::http");

interface PerConnectionServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

type ServeOnConnection = (
  conn: Deno.Conn,
  signal: AbortSignal,
  handler: ServeHandler,
  onError: (error: unknown) => Response,
  onListen: (scheme: string) => void,
) => PerConnectionServer;

/** The runtime's per-connection server, when this Deno has it. */
function serveOnConnection(): ServeOnConnection | null {
  const deno = Deno as unknown as Record<symbol | string, unknown>;
  const key = deno.internal as symbol | undefined;
  const internal = key === undefined ? undefined : deno[key] as Record<string, unknown>;
  const serve = internal?.serveHttpOnConnection;
  return typeof serve === "function" ? serve as ServeOnConnection : null;
}

const SWEEP_MS = 500;
const CLOSE_DELAY_MS = 10;
const ACCEPT_BACKLOG = 4096;
const ACCEPT_BACKOFF_MS = [100, 200, 400, 800, 1600, 2000];

export async function serveConnections(
  options: ConnectionServerOptions,
): Promise<ConnectionServer> {
  guardProcessErrors();
  const serve = options.useFallback ? null : serveOnConnection();
  if (serve === null) {
    log.warn("this Deno has no per-connection server: connection limits are not enforced");
    return await serveWithRestart(options);
  }
  // A deep accept queue (the kernel caps it at net.core.somaxconn): under a connection storm a
  // full queue drops a normal client's SYN, and its retransmission costs it 1 s, 3 s, 7 s...
  const address = { hostname: options.hostname, port: options.port, tcpBacklog: ACCEPT_BACKLOG };
  const listener: Deno.Listener = options.tls
    ? Deno.listenTls({ ...address, ...options.tls, alpnProtocols: ["http/1.1"] })
    : Deno.listen(address);
  const table = new ConnectionTable();
  const servers = new Map<TrackedConnection, PerConnectionServer>();
  let stopping = false;

  const onError = (error: unknown) => {
    log.error("request failed outside the S3 handler", { error: String(error) });
    return new Response("Internal Server Error", { status: 500 });
  };

  const admit = (conn: Deno.Conn) => {
    const { maxConnections } = options.limits();
    if (!table.makeRoom(maxConnections)) {
      table.refused++;
      warnOnce("refused", `all ${maxConnections} connections are busy: refusing new ones`);
      conn.close();
      return;
    }
    const aborter = new AbortController();
    // Aborting a connection that has ended throws inside the runtime's abort listener (an
    // uncaught BadResource that ends the process, measured), so it is never done: `ended` is set
    // in the same turn the runtime closes the connection, before any timer can run.
    let ended = false;
    const tracked: TrackedConnection = {
      inFlight: 0,
      served: 0,
      idleSince: performance.now(),
      closing: false,
      closeWhenIdle: false,
      // A deferred close waits past the current task: aborting inside the `completed` callback
      // of an answer whose request body was left unread lost the answer and left the socket
      // open (measured).
      close: (deferred) => {
        if (!deferred) return aborter.abort();
        const closeWhenIdle = () => {
          if (ended) return;
          // A request that arrived meanwhile is let finish first.
          if (tracked.inFlight === 0) aborter.abort();
          else setTimeout(closeWhenIdle, SWEEP_MS);
        };
        setTimeout(closeWhenIdle, CLOSE_DELAY_MS);
      },
    };
    const handler: ServeHandler = async (request, info) => {
      table.requestStarted(tracked);
      info.completed.then(
        () => table.requestEnded(tracked),
        () => table.requestEnded(tracked),
      );
      const response = await options.handler(request, info);
      // An error answer may leave the body unread; the runtime would keep the connection open
      // waiting for it, so it is closed once the answer is out, and the answer says so: a
      // client reusing it meanwhile would lose its next request. (Headers, not `request.body`:
      // the body getter would open the body stream of every request.)
      if (response.status < 400 || !hasBody(request.headers)) return response;
      tracked.closeWhenIdle = true;
      return withConnectionClose(response);
    };
    table.add(tracked);
    const server = serve(conn, aborter.signal, handler, onError, () => {});
    servers.set(tracked, server);
    // A connection reset by the client rejects `finished`: that is the client's business.
    server.finished.catch(() => {}).finally(() => {
      ended = true;
      table.remove(tracked);
      servers.delete(tracked);
    });
  };

  const acceptLoop = async () => {
    let failures = 0;
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (stopping) return;
        // EMFILE and friends: free a descriptor, wait, accept again. Never give up.
        const wait = ACCEPT_BACKOFF_MS[Math.min(failures++, ACCEPT_BACKOFF_MS.length - 1)];
        warnOnce("accept", `accepting a connection failed, retrying in ${wait} ms`, err);
        table.closeOldestIdle("capacity");
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      failures = 0;
      if (stopping) {
        conn.close();
        return;
      }
      try {
        admit(conn);
      } catch (err) {
        log.error("serving a connection failed", { error: String(err) });
        try {
          conn.close();
        } catch { /* already handed over */ }
      }
    }
  };

  const sweeper = setInterval(() => table.sweep(options.limits()), SWEEP_MS);
  const accepting = acceptLoop();
  let resolveFinished!: () => void;
  const finished = new Promise<void>((resolve) => resolveFinished = resolve);
  let shuttingDown: Promise<void> | null = null;

  return {
    addr: listener.addr as Deno.NetAddr,
    finished,
    stats: () => ({ open: table.size, closed: { ...table.closed }, refused: table.refused }),
    shutdown() {
      shuttingDown ??= (async () => {
        stopping = true;
        clearInterval(sweeper);
        listener.close();
        await accepting;
        const draining: Promise<void>[] = [];
        for (const tracked of table.all()) {
          const server = servers.get(tracked);
          if (tracked.inFlight === 0) tracked.close(false);
          else {
            tracked.closeWhenIdle = true;
            draining.push(server?.shutdown().catch(() => {}) ?? Promise.resolve());
          }
          if (server) draining.push(server.finished.catch(() => {}));
        }
        await Promise.all(draining);
        resolveFinished();
      })();
      return shuttingDown;
    },
  };
}

function withConnectionClose(response: Response): Response {
  try {
    response.headers.set("connection", "close");
    return response;
  } catch {
    // Immutable headers (a fetched or static response): copy them.
    const headers = new Headers(response.headers);
    headers.set("connection", "close");
    return new Response(response.body, { status: response.status, headers });
  }
}

function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  return (length !== null && length.trim() !== "0") || headers.has("transfer-encoding");
}

/** One warning per kind per 10 s: a flood must not flood the log too. */
const lastWarned = new Map<string, number>();
function warnOnce(kind: string, message: string, err?: unknown): void {
  const now = Date.now();
  if (now - (lastWarned.get(kind) ?? 0) < 10_000) return;
  lastWarned.set(kind, now);
  log.warn(message, err === undefined ? {} : { error: String(err) });
}
