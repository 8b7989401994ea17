/**
 * The backends a config describes, named: the entries of `storage.backends`, or else one backend
 * named `default` from `storage.backend`, the `s3` shorthand or the `filesystem` shorthand.
 * Also the local state directory (multipart state, spool files), which is the filesystem path of
 * the single-backend settings (`storage.filesystem`, `storage.backend.path`, SVC_DATA_DIR) or
 * `./data`, whatever backends hold the objects.
 */
import { createHash } from "node:crypto";
import type { Config } from "../config/schema/schema.ts";
import type { EncryptionConfig } from "../config/schema/schema-storage.ts";
import type { Backend } from "../storage/backend.ts";
import { EncryptingBackend } from "../storage/encryption/encrypting-backend.ts";
import type { DecryptFailure } from "../storage/encryption/encryption-error.ts";
import { KeyRing } from "../storage/encryption/key-ring.ts";
import { sseWriteHeaders } from "../storage/encryption/sse-headers.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { ObservedBackend } from "../storage/observed-backend.ts";
import { S3Backend } from "../storage/s3/s3-backend.ts";
import { s3OptionsFromConfig } from "../storage/s3/s3-options.ts";
import { StartupError } from "./startup-checks.ts";

export interface BackendSpec {
  name: string;
  type: "filesystem" | "s3";
  path?: string;
  endpoint?: string;
  region?: string;
  force_path_style?: boolean;
  access_key_id?: string;
  secret_access_key?: string;
  /** The backend's encryption block (`storage.backend_encryption` for the single backend). */
  encryption?: EncryptionConfig;
}

export interface BackendPlan {
  specs: BackendSpec[];
  defaultName: string;
}

export const SINGLE_BACKEND_NAME = "default";

/** The local state directory of a config (see the header). */
export function stateDirOf(config: Config): string {
  return config.storage.backend?.path ?? config.storage.filesystem ?? "./data";
}

export function backendPlanOf(config: Config): BackendPlan {
  const { storage } = config;
  if (storage.backends.length > 0) {
    return {
      specs: storage.backends.map(({ encryption, ...spec }) => ({
        ...spec,
        ...(encryption ? { encryption } : {}),
      })),
      defaultName: storage.default_backend ?? storage.backends[0].name,
    };
  }
  const name = SINGLE_BACKEND_NAME;
  const encryption = storage.backend_encryption ? { encryption: storage.backend_encryption } : {};
  if (storage.s3 !== undefined) {
    return {
      specs: [{
        name,
        type: "s3",
        endpoint: storage.s3,
        region: storage.region,
        force_path_style: storage.force_path_style,
        access_key_id: storage.access_key_id,
        secret_access_key: storage.secret_access_key,
        ...encryption,
      }],
      defaultName: name,
    };
  }
  if (storage.backend !== undefined) {
    return { specs: [{ name, ...storage.backend, ...encryption }], defaultName: name };
  }
  return {
    specs: [{ name, type: "filesystem", path: storage.filesystem ?? "./data", ...encryption }],
    defaultName: name,
  };
}

/**
 * A stable fingerprint of what the backends are, encryption blocks included: a change means the
 * storage is rebuilt. Hashed, since the plan holds credentials and keys.
 */
export function backendFingerprint(config: Config): string {
  return createHash("sha256").update(JSON.stringify(backendPlanOf(config))).digest("hex");
}

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
