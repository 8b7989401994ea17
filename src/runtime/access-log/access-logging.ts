/**
 * The access log around the whole listener: every request (S3 and `/_/`) gets one line once its
 * response body was sent or the client went away. Bytes are counted as they pass: the request
 * body as the surfaces read it, the response body as the server sends it. The surfaces note what
 * only they know (request id, principal, operation) with `noteAccess`; the client address is
 * derived exactly as the surfaces do (`trust_proxy_headers`). Only when the log is on is anything
 * wrapped: off costs nothing per request.
 */
import { clientIp } from "../../auth/mod.ts";
import { splitRawUrl } from "../../http/mod.ts";
import { type AccessLogWriter, accessNoteOf, formatAccessLine } from "../../observability/mod.ts";

type Handler = (request: Request, info: Deno.ServeHandlerInfo) => Promise<Response>;

/** Counts the bytes of `body` as they are read; `done` is told once, with `cancelled`. */
function counted(
  body: ReadableStream<Uint8Array>,
  onBytes: (n: number) => void,
  done?: (cancelled: boolean) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  const finish = (cancelled: boolean) => {
    if (finished) return;
    finished = true;
    done?.(cancelled);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          controller.close();
          finish(false);
          return;
        }
        onBytes(value.byteLength);
        controller.enqueue(value);
      } catch (err) {
        controller.error(err);
        finish(true);
      }
    },
    async cancel(reason) {
      finish(true);
      await reader.cancel(reason);
    },
  });
}

export function withAccessLog(
  handler: Handler,
  writer: AccessLogWriter,
  trustProxyHeaders: () => boolean,
): Handler {
  return async (incoming, info) => {
    const started = performance.now();
    const time = new Date();
    let bytesIn = 0;
    let request = incoming;
    if (incoming.body !== null) {
      request = new Request(incoming, {
        body: counted(incoming.body, (n) => bytesIn += n),
        duplex: "half",
      } as RequestInit);
    }
    const response = await handler(request, info);
    const { path, search } = splitRawUrl(incoming.url);
    const remote = (info.remoteAddr as Deno.NetAddr | undefined)?.hostname;
    let bytesOut = 0;
    const emit = (cancelled: boolean) => {
      const note = accessNoteOf(request) ?? {};
      writer.write(formatAccessLine({
        ...note,
        time,
        client: clientIp(incoming.headers, remote, trustProxyHeaders()) ?? null,
        method: incoming.method.toUpperCase(),
        path,
        query: search,
        status: response.status,
        // What the surface really read: a refused upload whose body was never read counts 0.
        bytesIn,
        bytesOut,
        durationMs: performance.now() - started,
        cancelled,
      }));
    };
    // Nothing to count: answered now, untouched. Checked before `body`, whose getter would turn
    // a string body into a stream (the server's slower path) for an empty answer.
    if (
      incoming.method.toUpperCase() === "HEAD" || response.headers.get("content-length") === "0" ||
      response.status === 204 || response.status === 304 || response.body === null
    ) {
      emit(false);
      return response;
    }
    return new Response(counted(response.body, (n) => bytesOut += n, emit), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
