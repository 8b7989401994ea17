/**
 * Webhook signing (SPEC leaves it open; our choice, in the style most webhook senders use). With
 * `advanced.event_delivery.webhook_secret` set, every delivery carries
 *
 *     X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
 *
 * A receiver recomputes the HMAC over the timestamp, a dot and the raw body bytes as received,
 * compares in constant time, and refuses a timestamp too far from its clock (5 minutes is usual)
 * so a captured delivery cannot be replayed later. The event id (`event.id`) dedupes retries.
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-svc-signature";

function hmacHex(secret: string, timestamp: number, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/** The signature header's value for `body` at `nowMs`. */
export function signatureHeader(secret: string, body: string, nowMs: number): string {
  const timestamp = Math.floor(nowMs / 1000);
  return `t=${timestamp},v1=${hmacHex(secret, timestamp, body)}`;
}

/**
 * What a receiver does (tests use it; receivers may copy the recipe): true when `header` signs
 * `body` under `secret` within `toleranceSecs` of `nowMs`.
 */
export function verifySignature(
  secret: string,
  header: string | null,
  body: string,
  nowMs: number,
  toleranceSecs = 300,
): boolean {
  if (header === null) return false;
  const parts = new Map(
    header.split(",").map((part) => {
      const eq = part.indexOf("=");
      return [part.slice(0, eq).trim(), part.slice(eq + 1).trim()] as const;
    }),
  );
  const timestamp = Number(parts.get("t"));
  const given = parts.get("v1") ?? "";
  if (!Number.isSafeInteger(timestamp) || !/^[0-9a-f]{64}$/.test(given)) return false;
  if (Math.abs(nowMs / 1000 - timestamp) > toleranceSecs) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, body), "hex");
  return timingSafeEqual(expected, Buffer.from(given, "hex"));
}
