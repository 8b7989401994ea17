/**
 * Opens the backends a config describes (config/backend-plan.ts names them): each the real
 * backend under its encryption layer, under its compression layer (compress, then seal),
 * observed.
 */
import { backendPlanOf, type BackendSpec, type Config } from "../config/mod.ts";
import { REFERENCE_NAME } from "../delta/mod.ts";
import {
  type Backend,
  CompressingBackend,
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

/** What a backend spec needs checked before anything opens: its keys, and an S3 backend's options. */
async function settingsOf(spec: BackendSpec, config: Config, spoolDir: string) {
  let keys: KeyRing;
  try {
    keys = await KeyRing.fromConfig(spec.name, spec.encryption);
  } catch (err) {
    throw new StartupError(err instanceof Error ? err.message : String(err));
  }
  if (spec.type === "filesystem") return { keys, s3: undefined };
  try {
    const s3 = {
      ...s3OptionsFromConfig(spec, config.advanced, spoolDir),
      writeHeaders: sseWriteHeaders(spec.encryption),
    };
    return { keys, s3 };
  } catch (err) {
    throw new StartupError(
      `Backend "${spec.name}": ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * Checks every backend's settings (keys, endpoint, credentials) without opening or writing
 * anything: a config that cannot start is refused before its data directory is touched (the
 * directory lock creates it). Throws StartupError.
 */
export async function checkBackendSettings(config: Config): Promise<void> {
  for (const spec of backendPlanOf(config).specs) await settingsOf(spec, config, "/nonexistent");
}

/**
 * Opens one backend: the real one, under its encryption layer (always there, so objects that
 * say they are encrypted are decrypted whatever the current mode), under its compression layer
 * (always there too, so compressed objects read whatever `storage_compression` says now; new
 * writes follow the `current` config), observed (readiness uses its last success). Throws
 * StartupError.
 */
export async function openBackend(
  spec: BackendSpec,
  config: Config,
  spoolDir: string,
  onDecryptFailure?: (reason: DecryptFailure) => void,
  current: () => Config = () => config,
): Promise<ObservedBackend> {
  const { keys, s3 } = await settingsOf(spec, config, spoolDir);
  const backend: Backend = s3 === undefined
    ? await FilesystemBackend.open(spec.path ?? "./data")
    : await S3Backend.open(s3);
  const encrypting = new EncryptingBackend(backend, keys, onDecryptFailure);
  return new ObservedBackend(
    new CompressingBackend(encrypting, {
      settings: (bucket) => {
        const { advanced, storage } = current();
        // `compression: false` means "store what is sent" (e.g. the backend of another svc,
        // whose baselines arrive compressed already): no storage compression either. Looked up
        // by the backend's bucket name, which is the client's unless a route renames it.
        const off = storage.buckets[bucket]?.compression === false;
        return { mode: off ? "off" : advanced.storage_compression, level: advanced.zstd_level };
      },
      isBaseline: (key) => key === REFERENCE_NAME || key.endsWith(`/${REFERENCE_NAME}`),
    }),
  );
}
