/**
 * A webhook receiver for event-delivery tests: a real HTTP server on a loopback port (port 0)
 * that records every request and answers what the test decides (`respond`), so tests can make
 * it fail, recover, be slow, or play Slack's Web API.
 */
export interface Received {
  path: string;
  headers: Headers;
  body: string;
  /** The status it was answered with. */
  status: number;
  at: number;
}

export interface Reply {
  status: number;
  body?: string;
  /** Wait this long before answering (ms). */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides each answer; default 200 `ok`. Replace it at any time. */
  respond: (request: { path: string; body: string; headers: Headers }) => Reply;
  /** The JSON bodies of requests answered 2xx on `path` (all paths when absent). */
  accepted(path?: string): unknown[];
  close(): Promise<void>;
}

export function startReceiver(): Receiver {
  const receiver: Receiver = {
    url: "",
    received: [],
    respond: () => ({ status: 200, body: "ok" }),
    accepted(path) {
      return this.received
        .filter((r) => r.status >= 200 && r.status < 300 && (path === undefined || r.path === path))
        .map((r) => JSON.parse(r.body));
    },
    close: async () => {},
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      const body = await request.text();
      const reply = receiver.respond({ path, body, headers: request.headers });
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      receiver.received.push({
        path,
        headers: request.headers,
        body,
        status: reply.status,
        at: Date.now(),
      });
      const empty = reply.status === 204 || reply.status === 205 || reply.status === 304;
      return new Response(empty ? null : reply.body ?? "", { status: reply.status });
    },
  );
  receiver.url = `http://127.0.0.1:${server.addr.port}`;
  receiver.close = () => server.shutdown();
  return receiver;
}

/** Polls `check` until it returns true (or throws after `timeoutMs` with `what`). */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
