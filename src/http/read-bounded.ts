/**
 * Reads a small request body whole, refusing it once it passes `limit` bytes (MalformedXML: the
 * bodies read this way are XML documents or answers svc keeps). The reader is cancelled on
 * refusal, so the rest of an oversized body is never buffered.
 */
import { SvcError } from "../lib/mod.ts";

export async function readBounded(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new SvcError("MalformedXML", `The request body is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
