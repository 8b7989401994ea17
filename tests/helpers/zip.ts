/**
 * A zip written the way Java's and Python's zipfile write one: each member deflated alone by
 * zlib (node:zlib, raw deflate), local headers, a central directory and its end record (no data
 * descriptors, no zip64). fflate's zipSync uses its own deflater, which the deflate model does not
 * predict; this one's members become predicted records (docs/DELTA.md).
 */
import { crc32, deflateRawSync } from "node:zlib";

export function zlibZip(members: Record<string, Uint8Array>, level = 9): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const [name, data] of Object.entries(members)) {
    const fileName = new TextEncoder().encode(name);
    const packed = new Uint8Array(deflateRawSync(data, { level }));
    const fields = (head: DataView, at: number) => {
      head.setUint16(at, 20, true); // version needed
      head.setUint16(at + 2, 0, true); // flags
      head.setUint16(at + 4, 8, true); // deflated
      head.setUint32(at + 6, 0, true); // time and date: 1980-01-01 00:00
      head.setUint32(at + 10, crc32(data), true);
      head.setUint32(at + 14, packed.length, true);
      head.setUint32(at + 18, data.length, true);
      head.setUint16(at + 22, fileName.length, true);
    };
    const local = new Uint8Array(30 + fileName.length);
    const l = new DataView(local.buffer);
    l.setUint32(0, 0x04034b50, true);
    fields(l, 4);
    local.set(fileName, 30);
    const entry = new Uint8Array(46 + fileName.length);
    const c = new DataView(entry.buffer);
    c.setUint32(0, 0x02014b50, true);
    c.setUint16(4, 20, true); // version made by
    fields(c, 6);
    c.setUint32(42, offset, true);
    entry.set(fileName, 46);
    parts.push(local, packed);
    central.push(entry);
    offset += local.length + packed.length;
  }
  const size = central.reduce((n, e) => n + e.length, 0);
  const end = new Uint8Array(22);
  const e = new DataView(end.buffer);
  e.setUint32(0, 0x06054b50, true);
  e.setUint16(8, central.length, true);
  e.setUint16(10, central.length, true);
  e.setUint32(12, size, true);
  e.setUint32(16, offset, true);
  const all = [...parts, ...central, end];
  const out = new Uint8Array(all.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of all) out.set(p, (at += p.length) - p.length);
  return out;
}
