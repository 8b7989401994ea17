/**
 * Client-address predicates, shared by operator admission blocks (`match.source_ip`,
 * `match.source_ip_list`) and IAM `aws:SourceIp` conditions: exact addresses and CIDR blocks, IPv4
 * and IPv6. An IPv4-mapped IPv6 client address
 * (`::ffff:192.0.2.1`) is judged as the IPv4 address it carries, since dual-stack listeners
 * report IPv4 clients that way.
 */

interface Address {
  family: 4 | 6;
  value: bigint;
}

function parseV4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    return null;
  }
  return parts.reduce((sum, part) => (sum << 8n) | BigInt(part), 0n);
}

function parseV6(text: string): bigint | null {
  let head = text;
  let tail32: bigint | null = null;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail32 = parseV4(text.slice(lastColon + 1));
    if (tail32 === null) return null;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const left = groups(halves[0]), right = halves.length === 2 ? groups(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...left, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (!all.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return null;
  let value = all.reduce((sum, group) => (sum << 16n) | BigInt(parseInt(group, 16)), 0n);
  if (tail32 !== null) value = (value & ~0xffffffffn) | tail32;
  return value;
}

const MAPPED_V4 = 0xffffn << 32n;

export function parseAddress(text: string): Address | null {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const v4 = parseV4(bare);
  if (v4 !== null) return { family: 4, value: v4 };
  const v6 = parseV6(bare.replace(/%.*$/, "")); // a zone id names an interface, not an address
  if (v6 === null) return null;
  if (v6 >> 32n === MAPPED_V4 >> 32n) return { family: 4, value: v6 & 0xffffffffn };
  return { family: 6, value: v6 };
}

/** A predicate over client addresses from IPs and CIDR blocks (bare IPs mean /32 or /128). */
export function addressMatcher(entries: readonly string[]): (ip: string) => boolean {
  const blocks = entries.map((entry) => {
    const slash = entry.indexOf("/");
    const address = parseAddress(slash < 0 ? entry : entry.slice(0, slash));
    if (address === null) throw new Error(`Not an IP address or CIDR block: "${entry}"`);
    const width = address.family === 4 ? 32 : 128;
    let bits = slash < 0 ? width : Number(entry.slice(slash + 1));
    // An IPv4-mapped IPv6 block counts its bits over 128; the IPv4 address is the low 32.
    if (address.family === 4 && entry.includes(":")) bits = Math.max(0, bits - 96);
    const shift = BigInt(width - bits);
    return { family: address.family, shift, network: address.value >> shift };
  });
  return (ip) => {
    const address = parseAddress(ip);
    if (address === null) return false;
    return blocks.some((block) =>
      block.family === address.family && address.value >> block.shift === block.network
    );
  };
}
