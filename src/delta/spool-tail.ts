/**
 * Reading a spool file while it is still being written ("tail -f"), so the encoder can take its
 * input from the file instead of from the upload's chunks: the upload then runs at disk speed and
 * never waits for the encoder, and the encoder never waits for the HTTP side's event-loop turns
 * (it reads large chunks from the page cache). Memory stays one read buffer per reader.
 */

/** Read size when feeding the encoder from the spool. */
const TAIL_READ_BYTES = 1 << 20;

/** The writer's side: how far the file is complete, and whether it will grow any more. */
export class SpoolProgress {
  #written = 0;
  #ended = false;
  #failure: { error: unknown } | undefined;
  #wake: (() => void) | undefined;

  /** `n` more bytes are in the file (call after they were written). */
  advance(n: number): void {
    this.#written += n;
    this.#notify();
  }

  /** The file is complete. */
  end(): void {
    this.#ended = true;
    this.#notify();
  }

  /** The upload failed: readers fail with `error`. */
  fail(error: unknown): void {
    this.#failure ??= { error };
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Resolves with the bytes complete once beyond `offset`, or null at the end of the file. */
  async beyond(offset: number): Promise<number | null> {
    for (;;) {
      if (this.#failure) throw this.#failure.error;
      if (this.#written > offset) return this.#written;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

/**
 * The bytes of the spool file at `path` as they become complete, up to the end reported by
 * `progress`. One reader per progress (it wakes a single waiter).
 */
export function tailSpool(path: string, progress: SpoolProgress): ReadableStream<Uint8Array> {
  let file: Deno.FsFile | undefined;
  let offset = 0;
  const close = () => {
    file?.close();
    file = undefined;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        file ??= await Deno.open(path, { read: true });
        const complete = await progress.beyond(offset);
        if (complete === null) {
          close();
          controller.close();
          return;
        }
        const chunk = new Uint8Array(Math.min(TAIL_READ_BYTES, complete - offset));
        let filled = 0;
        while (filled < chunk.length) {
          const n = await file.read(chunk.subarray(filled));
          if (n === null) throw new Error(`Spool file "${path}" ended before byte ${complete}`);
          filled += n;
        }
        offset += filled;
        controller.enqueue(chunk);
      } catch (err) {
        close();
        controller.error(err);
      }
    },
    cancel() {
      close();
    },
  }, { highWaterMark: 0 });
}
