/**
 * Plaintext stream → stored stream: the header, then one sealed frame per FRAME_SIZE bytes of
 * plaintext (frame-format.ts). Memory is bounded by the pipeline window (PIPELINE_DEPTH frames
 * in flight plus the one being filled), whatever the object's size. A full frame is sealed only
 * once the next byte (or the end) shows whether it is the final one.
 */
import { sealFrame } from "./frame-crypto.ts";
import { FRAME_SIZE, type FrameHeader } from "./frame-format.ts";
import { FrameWindow } from "./pipeline.ts";

export interface EncryptProgress {
  /** Plaintext bytes read so far. */
  plainBytes: number;
}

export function encryptStream(
  source: ReadableStream<Uint8Array>,
  key: CryptoKey,
  header: FrameHeader,
  progress: EncryptProgress = { plainBytes: 0 },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const window = new FrameWindow<Uint8Array>();
  let index = 0;
  let frame = new Uint8Array(FRAME_SIZE);
  let fill = 0;
  /** A full frame waiting to learn whether it is the last. */
  let held: Uint8Array<ArrayBuffer> | null = null;
  let ended = false;
  let headerSent = false;

  const seal = (plain: Uint8Array<ArrayBuffer>, final: boolean) => {
    window.push(sealFrame(key, header, index++, final, plain));
  };

  /** Reads until the window is full or the source ended (then the last frame is sealed). */
  const topUp = async () => {
    while (!ended && !window.full) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        if (held && fill === 0) seal(held, true);
        else {
          if (held) seal(held, false);
          seal(frame.subarray(0, fill), true);
        }
        held = null;
        return;
      }
      progress.plainBytes += value.length;
      let offset = 0;
      while (offset < value.length) {
        if (held) {
          seal(held, false); // more bytes follow it: not the final frame
          held = null;
        }
        const take = Math.min(FRAME_SIZE - fill, value.length - offset);
        frame.set(value.subarray(offset, offset + take), fill);
        fill += take;
        offset += take;
        if (fill === FRAME_SIZE) {
          held = frame;
          frame = new Uint8Array(FRAME_SIZE);
          fill = 0;
        }
      }
    }
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(header.bytes);
        return;
      }
      try {
        await topUp();
        const next = window.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(await next);
      } catch (err) {
        window.clear();
        await reader.cancel(err).catch(() => {});
        throw err;
      }
    },
    async cancel(reason) {
      window.clear();
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
