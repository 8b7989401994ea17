/**
 * A request body that stops delivering bytes is cut: whenever svc waits for the next piece and
 * none arrives within `stallMs`, the stream errors with `reason()` and `onStall` is told (the S3
 * handler aborts the request, releasing its slot and discarding a staged write). Time the client
 * spends waiting on svc (a read not yet asked for) never counts, so a slow disk is not a stall.
 *
 * One timer per body, re-armed lazily: pieces of a fast upload cost a timestamp, not a timer.
 */
export function watchForStalls(
  body: ReadableStream<Uint8Array>,
  stallMs: number,
  reason: () => Error,
  onStall: (reason: Error) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
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

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      waitingSince = performance.now();
      timer ??= setTimeout(check, stallMs);
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (err) {
        stop();
        throw stalled ?? err;
      }
      waitingSince = null; // the timer, if armed, finds nothing to do and re-arms on next pull
      if (stalled !== null) throw stalled;
      if (result.done) {
        stop();
        controller.close();
      } else controller.enqueue(result.value);
    },
    cancel(why) {
      stop();
      return reader.cancel(why);
    },
  }, { highWaterMark: 0 });
}
