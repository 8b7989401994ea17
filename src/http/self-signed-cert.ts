/**
 * A self-signed X.509 certificate for `advanced.tls` without a configured certificate: an ECDSA
 * P-256 key from WebCrypto and a version 3 certificate written in DER by hand (no dependency, no
 * openssl on the host). The certificate names the hosts a client may reach svc by in its
 * subjectAltName and is an end-entity certificate (no CA flag): rustls and browsers accept it
 * once the operator trusts that one certificate, and refuse it otherwise, as they should.
 */

/** DER length octets: short form under 128, else the long form. */
function length(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

function tlv(tag: number, ...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const body = concat(parts);
  return concat([Uint8Array.from([tag, ...length(body.length)]), body]);
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const sequence = (...parts: Uint8Array[]) => tlv(0x30, ...parts);
const set = (...parts: Uint8Array[]) => tlv(0x31, ...parts);
const octets = (bytes: Uint8Array) => tlv(0x04, bytes);
const utf8 = (text: string) => tlv(0x0c, new TextEncoder().encode(text));

/** An unsigned big-endian integer as a DER INTEGER (leading zeros dropped, sign byte added). */
function integer(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0] & 0x80 ? concat([new Uint8Array([0]), trimmed]) : trimmed);
}

function oid(dotted: string): Uint8Array {
  const [first, second, ...rest] = dotted.split(".").map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) base128.unshift(0x80 | (value & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Uint8Array.from(bytes));
}

/** UTCTime `YYMMDDHHMMSSZ` (valid through 2049, which is all this module writes). */
function utcTime(date: Date): Uint8Array {
  const iso = date.toISOString(); // 2026-11-24T21:48:55.000Z
  const text = iso.slice(2, 4) + iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) +
    iso.slice(14, 16) + iso.slice(17, 19) + "Z";
  return tlv(0x17, new TextEncoder().encode(text));
}

/** A subjectAltName entry: an IP address (v4 or v6 text) or a DNS name. */
function generalName(host: string): Uint8Array {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) return tlv(0x87, Uint8Array.from(v4.slice(1).map(Number)));
  if (host.includes(":")) return tlv(0x87, ipv6Bytes(host));
  return tlv(0x82, new TextEncoder().encode(host));
}

function ipv6Bytes(text: string): Uint8Array {
  const [head, tail] = text.split("::");
  const groups = (part: string | undefined) =>
    part ? part.split(":").map((g) => parseInt(g, 16)) : [];
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined
    ? left
    : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  const out = new Uint8Array(16);
  all.forEach((group, i) => {
    out[i * 2] = group >> 8;
    out[i * 2 + 1] = group & 0xff;
  });
  return out;
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  const flag = critical ? [tlv(0x01, Uint8Array.from([0xff]))] : [];
  return sequence(oid(id), ...flag, octets(value));
}

/** WebCrypto's ECDSA signature (r ‖ s, 32 bytes each) as the DER Ecdsa-Sig-Value X.509 wants. */
function derSignature(raw: Uint8Array): Uint8Array {
  return sequence(integer(raw.subarray(0, 32)), integer(raw.subarray(32)));
}

function pem(label: string, der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der)).replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${base64}\n-----END ${label}-----\n`;
}

export interface SelfSignedCert {
  /** PEM certificate. */
  cert: string;
  /** PEM PKCS#8 private key. */
  key: string;
}

const ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";

/** A certificate for `hosts` (DNS names or IP addresses), valid from an hour ago for `days`. */
export async function selfSignedCert(
  hosts: string[],
  days = 3650,
  now = new Date(),
): Promise<SelfSignedCert> {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f; // positive
  const name = sequence(set(sequence(oid("2.5.4.3"), utf8("svc self-signed"))));
  const algorithm = sequence(oid(ECDSA_WITH_SHA256));
  const extensions = sequence(
    extension("2.5.29.19", true, sequence()), // basicConstraints: not a CA
    extension("2.5.29.15", true, tlv(0x03, Uint8Array.from([0x07, 0x80]))), // digitalSignature
    extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))), // serverAuth
    extension("2.5.29.17", false, sequence(...[...new Set(hosts)].map(generalName))),
  );
  const tbs = sequence(
    tlv(0xa0, integer(Uint8Array.from([2]))),
    integer(serial),
    algorithm,
    name,
    sequence(
      utcTime(new Date(now.getTime() - 3600_000)),
      utcTime(new Date(now.getTime() + days * 86_400_000)),
    ),
    name,
    spki,
    tlv(0xa3, extensions),
  );
  const signature = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, tbs),
  );
  const bits = concat([new Uint8Array([0]), derSignature(signature)]);
  const certificate = sequence(tbs, algorithm, tlv(0x03, bits));
  return { cert: pem("CERTIFICATE", certificate), key: pem("PRIVATE KEY", pkcs8) };
}
