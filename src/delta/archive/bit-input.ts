/**
 * Deflate's bit order over a ByteSource: bits are taken from the low end of each byte. Past the
 * end of the input the reader adds zero bytes ("ghost" bits) so a lookahead is always served;
 * consuming a ghost bit means the stream was truncated. The hot token loop (token-expand.ts)
 * copies these fields into locals and writes them back.
 */
import { type ByteSource, truncated } from "./byte-io.ts";

export class BitInput {
  bitBuf = 0;
  bitCount = 0;
  ghostBits = 0;
  readonly src: ByteSource;

  constructor(src: ByteSource) {
    this.src = src;
  }

  /** Makes at least `n` (<= 24) bits available. */
  need(n: number): void {
    while (this.bitCount < n) {
      let byte = this.src.byte();
      if (byte < 0) {
        byte = 0;
        this.ghostBits += 8;
      }
      this.bitBuf = (this.bitBuf | (byte << this.bitCount)) >>> 0;
      this.bitCount += 8;
    }
  }

  drop(n: number): void {
    this.bitBuf >>>= n;
    this.bitCount -= n;
    if (this.bitCount < this.ghostBits) throw truncated("a deflate stream");
  }

  bits(n: number): number {
    this.need(n);
    const value = this.bitBuf & ((1 << n) - 1);
    this.drop(n);
    return value;
  }

  /** After the stream's last bit: the padding bits of its last byte, and the bytes read ahead go
   * back to the source. */
  finish(): number {
    const padding = this.bits(this.bitCount & 7);
    this.src.unread((this.bitCount - this.ghostBits) >> 3);
    this.bitBuf = 0;
    this.bitCount = 0;
    this.ghostBits = 0;
    return padding;
  }
}
