/**
 * A request body that stops delivering bytes is cut: whenever svc waits for the next piece and
 * none arrives within `stallMs`, the stream errors with `reason()` and `onStall` is told (the S3
 * handler aborts the request, releasing its slot and discarding a staged write). Time the client
 * spends waiting on svc (a read not yet asked for) never counts, so a slow disk is not a stall.
 *
 * One timer per body, re-armed lazily: pieces of a fast upload cost a timestamp, not a timer.
 *
 * The watched body is a byte stream that hands a reader's own buffer down to the socket: a BYOB
 * read of 1 MiB (what the upload path does, s3/request-body.ts) stays one read of up to 1 MiB,
 * with no copy. A plain ReadableStream here would cut every body into Deno's 64 KiB chunks, and
 * each chunk costs a trip through every stream of the upload pipeline (measured: a 512 MiB PUT
 * spent ~1 s more CPU with 8,200 chunks than with ~900).
 */

/** Buffer size for a consumer that reads without its own buffer (text(), a default reader). */
const AUTO_CHUNK_BYTES = 64 * 1024;

export function watchForStalls(
  body: ReadableStream<Uint8Array>,
  stallMs: number,
  reason: () => Error,
  onStall: (reason: Error) => void,
): ReadableStream<Uint8Array> {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream: plain chunks.
  }
  const plain = byob ? undefined : body.getReader();
  const reader = byob ?? plain!;
  let waitingSince: number | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stalled: Error | null = null;

  const check = () => {
    timer = undefined;
    if (waitingSince === null || stalled !== null) return;
    const left = stallMs - (performance.now() - waitingSince);
    if (left > 0) {
      timer = setTimeout(check, left);
      return;
    }
    stalled = reason();
    reader.cancel(stalled).catch(() => {});
    onStall(stalled);
  };
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    waitingSince = null;
  };

  return new ReadableStream({
    type: "bytes",
    // Every read then comes with a buffer (the reader's, or one of this size), which a BYOB
    // source fills in place.
    autoAllocateChunkSize: AUTO_CHUNK_BYTES,
    async pull(controller) {
      const request = controller.byobRequest!;
      waitingSince = performance.now();
      timer ??= setTimeout(check, stallMs);
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        // The inner read takes the request's buffer and gives it back as result.value.
        if (byob) result = await byob.read(request.view as Uint8Array);
        else {
          // A byte stream takes no empty chunk; a plain source may send one (an empty body).
          do result = await plain!.read(); while (!result.done && result.value.byteLength === 0);
        }
      } catch (err) {
        stop();
        throw stalled ?? err;
      }
      waitingSince = null; // the timer, if armed, finds nothing to do and re-arms on next pull
      if (stalled !== null) throw stalled;
      if (result.done) {
        stop();
        controller.close();
        if (byob && result.value) request.respondWithNewView(result.value);
        else request.respond(0);
      } else if (byob) request.respondWithNewView(result.value);
      else controller.enqueue(result.value);
    },
    cancel(why) {
      stop();
      return reader.cancel(why);
    },
  }, { highWaterMark: 0 });
}
