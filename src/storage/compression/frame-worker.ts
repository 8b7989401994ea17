/**
 * The worker of frame-decoder.ts: decodes one large zstd frame at a time with the synchronous
 * form and checks its length (decompressFrame); a damaged frame answers an error.
 */
/// <reference lib="deno.worker" />
import type { FrameReply, FrameRequest } from "./frame-decoder.ts";
import { decompressFrame } from "./zstd-codec.ts";

self.onmessage = (event: MessageEvent<FrameRequest>) => {
  const { id, stored, expected } = event.data;
  let reply: FrameReply;
  const transfer: ArrayBuffer[] = [];
  try {
    let plain = decompressFrame(stored, expected, "frame");
    if (plain.byteOffset !== 0 || plain.byteLength !== plain.buffer.byteLength) {
      plain = plain.slice();
    }
    transfer.push(plain.buffer as ArrayBuffer);
    reply = { id, plain };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    reply = { id, error: message.replace(/^Compressed object frame is damaged: /, "") };
  }
  self.postMessage(reply, transfer);
};
