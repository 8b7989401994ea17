/**
 * The backends a config describes, named: the entries of `storage.backends`, or else one backend
 * named `default` from `storage.backend`, the `s3` shorthand or the `filesystem` shorthand.
 * Also the local state directory (multipart state, spool files), which is the filesystem path of
 * the single-backend settings (`storage.filesystem`, `storage.backend.path`, SVC_DATA_DIR) or
 * `./data`, whatever backends hold the objects. Plain reading of the config, so every room that
 * must find a backend by name (the runtime opening them, the jobs finding the coordination
 * bucket) reads it the same way; opening one is the runtime's (runtime/open-backend.ts).
 */
import { createHash } from "node:crypto";
import type { Config } from "./schema/schema.ts";
import type { EncryptionConfig } from "./schema/schema-storage.ts";

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
  // The S3 clients read these when they are built: a change rebuilds the stack, so it applies live
  // like any other setting not listed as restart-only (runtime/apply.ts).
  const { advanced } = config;
  const clients = S3_CLIENT_SETTINGS.map((name) => advanced[name]);
  return createHash("sha256").update(JSON.stringify([backendPlanOf(config), clients])).digest(
    "hex",
  );
}

/** Advanced settings an S3 backend's client takes at construction (storage/s3/s3-options.ts). */
const S3_CLIENT_SETTINGS = [
  "s3_connect_timeout_secs",
  "s3_read_timeout_secs",
  "s3_operation_attempt_timeout_secs",
  "s3_stall_grace_secs",
  "stream_copy_threshold",
  "multipart_part_size",
  "upload_concurrency",
] as const;
