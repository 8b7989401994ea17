/**
 * The listener for a Deno without a per-connection server (see connection-server.ts): plain
 * `Deno.serve`, started again on the same port whenever its accept loop ends on an error, so a
 * descriptor flood costs a pause, never the process. Connection limits are not enforced here.
 * (Measured on Deno 2.9.5, which never takes this path: after an EMFILE ends `Deno.serve`, the
 * runtime itself panics, "Too many open files" in ext/signals, before a restart can run.)
 */
import { getLogger } from "../observability/mod.ts";
import type { ConnectionServer, ConnectionServerOptions } from "./connection-server-contract.ts";

const log = getLogger("svc::http");
const RESTART_MS = 500;

export async function serveWithRestart(
  options: ConnectionServerOptions,
): Promise<ConnectionServer> {
  let stopping = false;
  let current: Deno.HttpServer<Deno.NetAddr>;
  let resolveFinished!: () => void;
  const finished = new Promise<void>((resolve) => resolveFinished = resolve);
  /** The port actually bound (options.port may be 0): a restart takes the same one. */
  let boundPort = options.port;

  const start = async (port: number): Promise<Deno.NetAddr> => {
    let resolveListening!: (addr: Deno.NetAddr) => void;
    const listening = new Promise<Deno.NetAddr>((resolve) => resolveListening = resolve);
    current = Deno.serve({
      hostname: options.hostname,
      port,
      ...options.tls,
      onListen: (addr) => resolveListening(addr as Deno.NetAddr),
    }, options.handler);
    current.finished.then(
      () => {
        if (stopping) resolveFinished();
      },
      async (err) => {
        if (stopping) return resolveFinished();
        log.warn(`the listener stopped, restarting it in ${RESTART_MS} ms`, { error: String(err) });
        for (;;) {
          await new Promise((resolve) => setTimeout(resolve, RESTART_MS));
          if (stopping) return resolveFinished();
          try {
            await start(boundPort);
            return;
          } catch (restartErr) {
            log.warn("restarting the listener failed", { error: String(restartErr) });
          }
        }
      },
    );
    return await listening;
  };

  const addr = await start(options.port);
  boundPort = addr.port;
  return {
    addr,
    finished,
    stats: () => null,
    async shutdown() {
      stopping = true;
      await current.shutdown();
      await finished;
    },
  };
}
