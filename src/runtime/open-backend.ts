/**
 * Opens the backends a config describes (config/backend-plan.ts names them): each the real
 * backend under its encryption layer, observed.
 */
import type { BackendSpec, Config } from "../config/mod.ts";
import {
  type Backend,
  type DecryptFailure,
  EncryptingBackend,
  FilesystemBackend,
  KeyRing,
  ObservedBackend,
  S3Backend,
  s3OptionsFromConfig,
  sseWriteHeaders,
} from "../storage/mod.ts";
import { StartupError } from "./startup-checks.ts";

/**
 * Opens one backend: the real one, under its encryption layer (always there, so objects that
 * say they are encrypted are decrypted whatever the current mode), observed (readiness uses its
 * last success). Throws StartupError.
 */
export async function openBackend(
  spec: BackendSpec,
  config: Config,
  spoolDir: string,
  onDecryptFailure?: (reason: DecryptFailure) => void,
): Promise<ObservedBackend> {
  let backend: Backend;
  let keys: KeyRing;
  try {
    keys = await KeyRing.fromConfig(spec.name, spec.encryption);
  } catch (err) {
    throw new StartupError(err instanceof Error ? err.message : String(err));
  }
  if (spec.type === "filesystem") {
    backend = await FilesystemBackend.open(spec.path ?? "./data");
  } else {
    let options;
    try {
      options = {
        ...s3OptionsFromConfig(spec, config.advanced, spoolDir),
        writeHeaders: sseWriteHeaders(spec.encryption),
      };
    } catch (err) {
      throw new StartupError(
        `Backend "${spec.name}": ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    backend = await S3Backend.open(options);
  }
  return new ObservedBackend(new EncryptingBackend(backend, keys, onDecryptFailure));
}
