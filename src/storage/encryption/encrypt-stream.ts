/**
 * Plaintext stream → stored stream: the header, then the sealed frames, one chunk per batch of
 * SEAL_BATCH_FRAMES frames. Memory is bounded by two plaintext batches (the one being filled and
 * a full one waiting to learn whether more bytes follow) and the sealed chunks the writer holds,
 * whatever the object's size. Only the object's last frame is sealed final, so a full batch is
 * sealed once the next byte (or the end) shows whether its last frame is the object's last.
 *
 * A sealed batch goes into a pooled 1 MiB read buffer (http/read-buffers.ts), lent to the writer
 * like an upload's own chunks: the filesystem backend's writer gives it back once written, so a
 * PUT does not fault in a fresh megabyte per batch (a fresh 1 MiB array costs ~256 page faults).
 * Hence 15 frames per batch: 15 sealed frames (983,280 bytes) fit in one pooled buffer.
 */
import { lendChunk, recycleChunk, takeReadBuffer } from "../../lib/mod.ts";
import { FRAME_SIZE, type FrameHeader, SEALED_FRAME_SIZE, TAG_SIZE } from "./frame-format.ts";
import type { ObjectCipher } from "./gcm-engine.ts";
import { BATCH_BYTES, BATCH_FRAMES, settleInOrder } from "./pipeline.ts";

/** Frames sealed per batch (pipeline.ts): a batch's sealed bytes fill one pooled buffer. */
export const SEAL_BATCH_FRAMES = BATCH_FRAMES;

export interface EncryptProgress {
  /** Plaintext bytes read so far. */
  plainBytes: number;
}

/** `cipher` is owned by the stream: disposed when it ends, fails or is cancelled. */
export function encryptStream(
  source: ReadableStream<Uint8Array>,
  cipher: ObjectCipher,
  header: FrameHeader,
  progress: EncryptProgress = { plainBytes: 0 },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let index = 0;
  let batch: Uint8Array = new Uint8Array(BATCH_BYTES);
  let fill = 0;
  /** A full batch waiting to learn whether it holds the object's last frame. */
  let held: Uint8Array | null = null;
  /** The buffer of the last sealed batch, reused for the next one. */
  let spare: Uint8Array | null = null;
  let headerSent = false;

  /** Seals `length` bytes of `plain`; the last frame is final when `final`. */
  const seal = async (plain: Uint8Array, length: number, final: boolean) => {
    const frames = Math.max(1, Math.ceil(length / FRAME_SIZE));
    const out = takeReadBuffer().subarray(0, length + frames * TAG_SIZE);
    const pending: Promise<void>[] = [];
    for (let frame = 0; frame < frames; frame++) {
      const from = frame * FRAME_SIZE;
      const bytes = Math.min(FRAME_SIZE, length - from);
      const at = frame * SEALED_FRAME_SIZE;
      const sealed = cipher.seal(
        index++,
        final && frame === frames - 1,
        plain.subarray(from, from + bytes),
        out.subarray(at, at + bytes + TAG_SIZE),
      );
      if (sealed) pending.push(sealed);
    }
    if (pending.length > 0) await settleInOrder(pending);
    lendChunk(out); // the consumer that wrote it out gives the buffer back
    return out;
  };

  const finish = () => {
    cipher.dispose();
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(header.bytes);
        return;
      }
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            if (held && fill === 0) controller.enqueue(await seal(held, held.length, true));
            else {
              if (held) controller.enqueue(await seal(held, held.length, false));
              controller.enqueue(await seal(batch, fill, true));
            }
            finish();
            controller.close();
            return;
          }
          progress.plainBytes += value.length;
          let sent = false;
          for (let offset = 0; offset < value.length;) {
            if (held) {
              // More bytes follow it: none of its frames is the final one.
              controller.enqueue(await seal(held, held.length, false));
              sent = true;
              spare = held; // its bytes are sealed: the next batch fills it
              held = null;
            }
            const take = Math.min(BATCH_BYTES - fill, value.length - offset);
            batch.set(value.subarray(offset, offset + take), fill);
            fill += take;
            offset += take;
            if (fill === BATCH_BYTES) {
              held = batch;
              batch = spare ?? new Uint8Array(BATCH_BYTES);
              spare = null;
              fill = 0;
            }
          }
          // Its bytes are copied into the batch: a lent read buffer can go back to the pool.
          recycleChunk(value);
          if (sent) return;
        }
      } catch (err) {
        finish();
        await reader.cancel(err).catch(() => {});
        throw err;
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
