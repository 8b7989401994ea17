/**
 * The listener's fallback (`useFallback`, serve-fallback.ts): plain `Deno.serve`, started again on
 * the same port when its accept loop ends on an error.
 *
 * The accept error is simulated: each server the fallback starts is a real `Deno.serve`, but its
 * `finished` is the test's to reject. A real one cannot be provoked here: on Deno 2.9.5 a
 * descriptor flood makes `Deno.serve` reject `finished` with EMFILE and the runtime then panics
 * (ext/signals, "Too many open files") before any restart could run, which is why svc serves
 * through its own accept loop wherever the per-connection server exists.
 */
import assert from "node:assert/strict";
import { serveConnections } from "./connection-server.ts";

interface StartedServer {
  port: number;
  /** Ends the server as an accept error would: it stops listening, `finished` rejects. */
  failAccept(error: Error): Promise<void>;
}

/** Replaces `Deno.serve` for the test's duration with real servers whose end the test decides. */
function interceptDenoServe(): { started: StartedServer[]; restore(): void } {
  const original = Object.getOwnPropertyDescriptor(Deno, "serve")!;
  const realServe = Deno.serve;
  const started: StartedServer[] = [];
  const fake = (options: Deno.ServeTcpOptions, handler: Deno.ServeHandler<Deno.NetAddr>) => {
    const server = realServe(options, handler);
    let settle!: { resolve: () => void; reject: (error: Error) => void };
    const finished = new Promise<void>((resolve, reject) => settle = { resolve, reject });
    started.push({
      port: options.port ?? 0,
      async failAccept(error) {
        await server.shutdown();
        settle.reject(error);
      },
    });
    return {
      finished,
      async shutdown() {
        await server.shutdown();
        settle.resolve();
      },
    };
  };
  Object.defineProperty(Deno, "serve", { value: fake, configurable: true, writable: true });
  return { started, restore: () => Object.defineProperty(Deno, "serve", original) };
}

async function get(port: number, path: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  assert.equal(response.status, 200);
  return await response.text();
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("fallback listener: serves, survives an accept error on the same port, shuts down", async () => {
  const intercepted = interceptDenoServe();
  try {
    const server = await serveConnections({
      hostname: "127.0.0.1",
      port: 0,
      useFallback: true,
      limits: () => ({ maxConnections: 16, headerTimeoutMs: 5_000, idleTimeoutMs: 5_000 }),
      handler: (request) =>
        Promise.resolve(new Response(`served ${new URL(request.url).pathname}`)),
    });
    const port = server.addr.port;
    assert.notEqual(port, 0);
    // Connection limits are not enforced on this path, so there are no connection stats.
    assert.equal(server.stats(), null);
    assert.equal(await get(port, "/a"), "served /a");
    assert.equal(await get(port, "/b"), "served /b");
    assert.equal(intercepted.started.length, 1);

    await intercepted.started[0].failAccept(new Error("Too many open files (os error 24)"));
    // Started again after a pause, on the port first bound (the options said 0).
    await waitFor(() => intercepted.started.length === 2, 5_000);
    assert.equal(intercepted.started[1].port, port);
    assert.equal(await get(port, "/after"), "served /after");

    await server.shutdown();
    await server.finished;
    assert.equal(intercepted.started.length, 2, "a shutdown is not an error to restart after");
    await assert.rejects(fetch(`http://127.0.0.1:${port}/gone`));
  } finally {
    intercepted.restore();
  }
});
