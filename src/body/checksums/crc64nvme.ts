/**
 * CRC-64/NVME (`x-amz-checksum-crc64nvme`): width 64, polynomial 0xAD93D23594C93659, reflected,
 * init and final XOR all ones; "123456789" → 0xAE8B14860A799888. JavaScript bit operations are
 * 32-bit, so the CRC is carried as [high, low] halves with a table of each half per byte.
 */

/** The reflected polynomial, 0x9A6C9329AC4BC9B5, as halves. */
const POLY_HI = 0x9A6C9329;
const POLY_LO = 0xAC4BC9B5;

const TABLE_HI = new Uint32Array(256);
const TABLE_LO = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let hi = 0;
  let lo = n;
  for (let bit = 0; bit < 8; bit++) {
    const carry = lo & 1;
    lo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
    hi = hi >>> 1;
    if (carry) {
      hi = (hi ^ POLY_HI) >>> 0;
      lo = (lo ^ POLY_LO) >>> 0;
    }
  }
  TABLE_HI[n] = hi;
  TABLE_LO[n] = lo;
}

/**
 * Continues the CRC of the bytes before (`previous`: the finished CRC as [high, low], [0, 0] for
 * none) over `data`; crc(b, crc(a)) equals crc(a + b).
 */
export function crc64nvme(data: Uint8Array, previous: [number, number] = [0, 0]): [number, number] {
  let hi = ~previous[0] >>> 0;
  let lo = ~previous[1] >>> 0;
  for (let i = 0; i < data.length; i++) {
    const index = (lo ^ data[i]) & 0xff;
    lo = ((lo >>> 8) | (hi << 24)) ^ TABLE_LO[index];
    hi = (hi >>> 8) ^ TABLE_HI[index];
  }
  return [~hi >>> 0, ~lo >>> 0];
}
