/**
 * IP addresses and CIDR blocks as bytes, for `aws:SourceIp` conditions. Parsed once when the
 * index is built; a request's address is parsed once per check. IPv4-mapped IPv6 addresses
 * (`::ffff:10.0.0.1`, what a dual-stack listener reports) are read as the IPv4 address, so a
 * `10.0.0.0/8` block matches them.
 */

export interface CidrBlock {
  bytes: Uint8Array;
  bits: number;
}

function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^\d{1,3}$/.test(parts[i]) || Number(parts[i]) > 255) return null;
    bytes[i] = Number(parts[i]);
  }
  return bytes;
}

function parseIpv6(text: string): Uint8Array | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIpv4(piece);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9A-Fa-f]{1,4}$/.test(piece)) {
        out.push(parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...new Array(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 0xff;
  });
  return bytes;
}

/** The address as 4 or 16 bytes (IPv4-mapped IPv6 as 4), or null when it is not an address. */
export function parseIp(text: string): Uint8Array | null {
  const unbracketed = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const v4 = parseIpv4(unbracketed);
  if (v4) return v4;
  const v6 = parseIpv6(unbracketed.split("%")[0]);
  if (!v6) return null;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? v6.slice(12) : v6;
}

/** `10.0.0.0/8`, `2001:db8::/32`, or a bare address (/32, /128); null when malformed. */
export function parseCidr(text: string): CidrBlock | null {
  const slash = text.indexOf("/");
  const bytes = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!bytes) return null;
  const max = bytes.length * 8;
  if (slash < 0) return { bytes, bits: max };
  const bitsText = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText)) return null;
  // An IPv4-mapped block (::ffff:10.0.0.0/104) was read as IPv4: move its prefix length too.
  let bits = Number(bitsText);
  if (bytes.length === 4 && text.slice(0, slash).includes(":")) bits -= 96;
  if (bits < 0 || bits > max) return null;
  return { bytes, bits };
}

export function cidrContains(block: CidrBlock, address: Uint8Array): boolean {
  if (block.bytes.length !== address.length) return false;
  const whole = block.bits >> 3;
  for (let i = 0; i < whole; i++) if (block.bytes[i] !== address[i]) return false;
  const rest = block.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (block.bytes[whole] & mask) === (address[whole] & mask);
}
