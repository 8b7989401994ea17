/**
 * Test support only (imported by *_test.ts): a scripted HTTP server for the S3 client and backend unit tests. Each
 * test answers requests with exactly the statuses, bodies and stalls it wants to provoke.
 */
import type { S3BackendOptions } from "../storage/s3/s3-options.ts";

/** What a test may inspect after the exchange (a Request is unreadable once answered). */
export interface SeenRequest {
  method: string;
  url: URL;
  headers: Headers;
}

export interface ScriptedServer {
  endpoint: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export function scriptedServer(
  answer: (request: Request, index: number) => Response | Promise<Response>,
): ScriptedServer {
  const requests: SeenRequest[] = [];
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen: () => {} },
    (request) => {
      const { method, url, headers } = request;
      requests.push({ method, url: new URL(url), headers: new Headers(headers) });
      return answer(request, requests.length - 1);
    },
  );
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    requests,
    close: async () => {
      controller.abort();
      await server.finished;
    },
  };
}

export function testOptions(
  endpoint: string,
  overrides: Partial<S3BackendOptions> = {},
): S3BackendOptions {
  return {
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    accessKeyId: "AKIDTEST",
    secretAccessKey: "very-secret-test-key",
    connectTimeoutMs: 1000,
    readTimeoutMs: 1000,
    attemptTimeoutMs: 5000,
    stallGraceMs: 200,
    streamCopyThreshold: 8 * 1024 * 1024,
    partSize: 5 * 1024 * 1024,
    uploadConcurrency: 2,
    spoolDir: "/tmp",
    retryBaseMs: 5,
    ...overrides,
  };
}

export function errorXml(code: string, message: string): Response {
  return new Response(
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`,
    { headers: { "content-type": "application/xml" } },
  );
}

export function errorResponse(status: number, code: string, message = "test"): Response {
  const xml = errorXml(code, message);
  return new Response(xml.body, { status, headers: xml.headers });
}
