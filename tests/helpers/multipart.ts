/** What the multipart suites compute independently of the server. */
import { createHash } from "node:crypto";

/** `"md5(binary md5 of each part)-N"`. */
export function multipartEtag(parts: Uint8Array[]): string {
  const all = createHash("md5");
  for (const part of parts) all.update(createHash("md5").update(part).digest());
  return `"${all.digest("hex")}-${parts.length}"`;
}

/** The parts as one object's bytes. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}
