/**
 * Access key pairs for IAM users, shaped like AWS's so clients and their validators accept them:
 * a 20-character id `AKIA` + 16 of `A-Z2-7`, and a 40-character secret of letters and digits
 * (about 238 bits). Characters are drawn from crypto randomness by rejection sampling, so every
 * character of the alphabet is equally likely (a plain `byte % n` would favour the first ones).
 */
import { randomBytes } from "node:crypto";

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function randomString(alphabet: string, length: number): string {
  // The largest multiple of the alphabet size that fits a byte; bytes at or above it are skipped.
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export function generateAccessKeyId(): string {
  return "AKIA" + randomString(ID_ALPHABET, 16);
}

export function generateSecretAccessKey(): string {
  return randomString(SECRET_ALPHABET, 40);
}
