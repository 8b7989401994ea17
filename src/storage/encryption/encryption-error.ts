/**
 * Why an encrypted object could not be read. The reason is a small fixed set (it labels the
 * decrypt-failure metric); the message names what was found, never key material.
 */
export type DecryptFailure = "auth" | "truncated" | "header" | "key-mismatch";

export class EncryptionError extends Error {
  constructor(readonly reason: DecryptFailure, message: string) {
    super(message);
    this.name = "EncryptionError";
  }
}
