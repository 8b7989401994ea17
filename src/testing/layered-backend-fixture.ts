/**
 * Test support only: a filesystem backend under the decorators the storage stack puts on it
 * (encryption with a fixed test key, storage compression, observation), for tests that check a
 * request option travels through every layer.
 */
import type { Backend } from "../storage/backend.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { CompressingBackend } from "../storage/compression/compressing-backend.ts";
import { EncryptingBackend } from "../storage/encryption/encrypting-backend.ts";
import { KeyRing } from "../storage/encryption/key-ring.ts";
import { ObservedBackend } from "../storage/observed-backend.ts";

export async function layeredBackend(dir: string): Promise<Backend> {
  const keys = await KeyRing.fromConfig("local", {
    mode: "aes256-gcm-proxy",
    key: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))),
  });
  const compressed = new CompressingBackend(
    new EncryptingBackend(await FilesystemBackend.open(dir), keys),
    { settings: () => ({ mode: "auto", level: 3 }), isBaseline: () => false },
  );
  return new ObservedBackend(compressed);
}
