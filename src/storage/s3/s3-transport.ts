/**
 * One attempt of one backend request, with its timeouts. Two carriers:
 *
 * - `fetch` for everything without a file body. Response bodies stream, so a GET hands the
 *   backend's bytes on without buffering.
 * - `node:http` for bodies read from a local file (PUT, UploadPart). Deno's fetch sends a
 *   ReadableStream body with `Transfer-Encoding: chunked` and drops our Content-Length, which S3
 *   refuses (411); node:http sends the length we give, streams the file in 1 MiB chunks with
 *   backpressure, and measured fastest (see the report in s3-upload.ts).
 *
 * Timeouts, as fetch lets us observe them (fetch has no "connected" event):
 * - headers: the response headers must arrive within connect + read timeout of sending a
 *   request without a body, or within the read timeout after the last body byte was handed over
 *   (node:http: the connect timeout covers establishing a new connection, separately);
 * - stall: while we wait for a body chunk (a pending read, so a slow downstream consumer never
 *   counts), more than read timeout + stall grace of silence aborts the body; an upload whose
 *   socket accepts nothing for that long is aborted the same way;
 * - attempt: one attempt, from sending to the end of a buffered answer, is capped; a streamed
 *   GET body belongs to its consumer once the headers are in, so only the stall rule applies.
 */
import http from "node:http";
import https from "node:https";
import { BackendLiveness, type HeadersWait } from "./s3-liveness.ts";

export class BackendTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackendTimeoutError";
  }
}

export interface Timeouts {
  connectMs: number;
  readMs: number;
  attemptMs: number;
  stallGraceMs: number;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  /** The body stream (streamed requests), or null once read into `text`. */
  body: ReadableStream<Uint8Array> | null;
  text: string;
}

export interface FileSlice {
  path: string;
  start: number;
  length: number;
}

const TEXT_DECODER = new TextDecoder();
type Timer = ReturnType<typeof setTimeout>;

/** A fetch attempt. `stream` leaves the body to the caller (with the stall watchdog on it). */
export async function fetchAttempt(
  url: string,
  init: { method: string; headers: Headers; body?: string },
  timeouts: Timeouts,
  stream: boolean,
  signal?: AbortSignal,
  liveness: BackendLiveness = new BackendLiveness(Infinity),
): Promise<RawResponse> {
  const controller = new AbortController();
  const abortWith = (message: string) => controller.abort(new BackendTimeoutError(message));
  const attemptTimer = setTimeout(
    () => abortWith(`Backend attempt exceeded ${timeouts.attemptMs} ms`),
    timeouts.attemptMs,
  );
  const headers = liveness.headersDeadline(timeouts.connectMs + timeouts.readMs);
  const wait = liveness.begin();
  let timedOut = false;
  const headersTimer = setTimeout(() => {
    timedOut = true;
    abortWith(noHeadersMessage(headers));
  }, headers.ms);
  const combined = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  try {
    const response = await fetch(url, { ...init, signal: combined }).catch((err) => {
      liveness.end(wait, timedOut ? "timeout" : "failed");
      throw combined.aborted ? combined.reason : err;
    });
    liveness.end(wait, "answered");
    clearTimeout(headersTimer);
    const body = response.body === null ? null : watchStalls(
      response.body,
      timeouts.readMs + timeouts.stallGraceMs,
      (message) => abortWith(message),
      () => combined.aborted ? combined.reason : undefined,
    );
    if (stream && response.ok) {
      clearTimeout(attemptTimer);
      return { status: response.status, headers: response.headers, body, text: "" };
    }
    const text = body ? TEXT_DECODER.decode(await new Response(body).arrayBuffer()) : "";
    return { status: response.status, headers: response.headers, body: null, text };
  } finally {
    clearTimeout(headersTimer);
    clearTimeout(attemptTimer);
  }
}

function noHeadersMessage(headers: { ms: number; probe: boolean }): string {
  return `Backend sent no response headers within ${headers.ms} ms` +
    (headers.probe ? " (it has answered nothing for longer than that: probed)" : "");
}

/**
 * Passes `body` through, failing it when a read stays pending longer than `silenceMs`. The
 * timer runs only while we wait for the backend, never while the consumer is not reading.
 */
export function watchStalls(
  body: ReadableStream<Uint8Array>,
  silenceMs: number,
  onStall: (message: string) => void,
  abortReason: () => unknown,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const timer = setTimeout(
        () => onStall(`Backend body stalled for more than ${silenceMs} ms`),
        silenceMs,
      );
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (err) {
        controller.error(abortReason() ?? err);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

// ---- node:http for file bodies ----------------------------------------------------------------

const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 256 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

/** Size of each read from the spool file; each chunk is a fresh buffer node:http may keep. */
const UPLOAD_CHUNK_BYTES = 1024 * 1024;

/** Sends `slice` of a local file as the request body, Content-Length set by the caller. */
export function fileBodyAttempt(
  url: string,
  init: { method: string; headers: Headers },
  slice: FileSlice,
  timeouts: Timeouts,
  signal?: AbortSignal,
  liveness: BackendLiveness = new BackendLiveness(Infinity),
): Promise<RawResponse> {
  const target = new URL(url);
  const transport = target.protocol === "https:" ? https : http;
  return new Promise<RawResponse>((resolve, reject) => {
    const timers = new Set<Timer>();
    let settled = false;
    const arm = (ms: number, message: string) => {
      const id = setTimeout(() => fail(new BackendTimeoutError(message)), ms);
      timers.add(id);
      return id;
    };
    const disarm = (id: Timer) => {
      clearTimeout(id);
      timers.delete(id);
    };
    const finish = () => {
      settled = true;
      for (const id of timers) clearTimeout(id);
      signal?.removeEventListener("abort", onAbort);
    };
    /** The wait for the response headers, once the body is sent, and its timeout. */
    let wait: HeadersWait | undefined;
    let headersTimeout: BackendTimeoutError | undefined;
    const fail = (err: unknown) => {
      if (settled) return;
      if (wait) liveness.end(wait, err === headersTimeout ? "timeout" : "failed");
      finish();
      request.destroy();
      reject(err);
    };
    const onAbort = () => fail(signal?.reason);
    const headers: Record<string, string> = {};
    init.headers.forEach((value, name) => headers[name] = value);
    const request = transport.request(target, {
      method: init.method,
      headers,
      agent: agents[target.protocol as "http:" | "https:"],
    });
    arm(timeouts.attemptMs, `Backend attempt exceeded ${timeouts.attemptMs} ms`);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    request.on("error", fail);
    request.on("socket", (socket) => {
      if (!socket.connecting) return;
      const id = arm(
        timeouts.connectMs,
        `Backend connection not made within ${timeouts.connectMs} ms`,
      );
      socket.once("connect", () => disarm(id));
    });
    let headersTimer: Timer | undefined;
    request.on("response", (response) => {
      if (headersTimer !== undefined) disarm(headersTimer);
      if (wait) liveness.end(wait, "answered");
      const chunks: Uint8Array[] = [];
      response.on("data", (chunk: Uint8Array) => chunks.push(chunk));
      response.on("error", fail);
      response.on("end", () => {
        if (settled) return;
        finish();
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) responseHeaders.set(name, String(value));
        }
        const text = TEXT_DECODER.decode(concat(chunks));
        resolve({ status: response.statusCode ?? 0, headers: responseHeaders, body: null, text });
      });
    });
    const stallMs = timeouts.readMs + timeouts.stallGraceMs;
    writeFileSlice(request, slice, stallMs, arm, disarm, () => settled).then(() => {
      if (settled) return;
      const headers = liveness.headersDeadline(timeouts.readMs);
      wait = liveness.begin();
      headersTimeout = new BackendTimeoutError(noHeadersMessage(headers));
      const id = setTimeout(() => fail(headersTimeout), headers.ms);
      timers.add(id);
      headersTimer = id;
    }, fail);
  });
}

async function writeFileSlice(
  request: http.ClientRequest,
  slice: FileSlice,
  stallMs: number,
  arm: (ms: number, message: string) => Timer,
  disarm: (id: Timer) => void,
  stopped: () => boolean,
): Promise<void> {
  using file = await Deno.open(slice.path, { read: true });
  await file.seek(slice.start, Deno.SeekMode.Start);
  let left = slice.length;
  while (left > 0 && !stopped()) {
    const chunk = new Uint8Array(Math.min(UPLOAD_CHUNK_BYTES, left));
    let filled = 0;
    while (filled < chunk.length) {
      const n = await file.read(chunk.subarray(filled));
      if (n === null) throw new Error(`Spool file "${slice.path}" ended early`);
      filled += n;
    }
    left -= filled;
    if (!request.write(chunk)) {
      const id = arm(stallMs, `Backend accepted no upload bytes for ${stallMs} ms`);
      await new Promise<void>((resolve) => {
        const done = () => {
          request.off("drain", done);
          request.off("close", done);
          resolve();
        };
        request.on("drain", done);
        request.on("close", done);
      });
      disarm(id);
    }
  }
  if (!stopped()) request.end();
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
