/**
 * What the backend and bucket routes share: the storage services they receive, how a running
 * config names its backends, how a backend is shown (never a secret), and how storage errors
 * become admin errors.
 */
import type { Config, ConfigPort, NamedBackend } from "../../config/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import type { Backend, BucketRouter } from "../../storage/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { AdminError } from "../admin-error.ts";

/** The running storage stack, as the routes need it (read anew per request: reloads rebuild it). */
export interface StorageView {
  router: Pick<
    BucketRouter,
    "listBuckets" | "headBucket" | "route" | "createBucketOn" | "deleteBucketOn"
  >;
  /** The opened backends by name. */
  backends: ReadonlyMap<string, Pick<Backend, "listBuckets">>;
  /** Whether a backend passed its last health probe (absent: not reported). */
  available?(name: string): boolean;
}

export interface BackendRoutesDeps {
  config: ConfigPort;
  audit: AuditFn;
  storage(): StorageView;
}

/** The name the runtime gives the one backend of `storage.backend` / `s3` / `filesystem`. */
export const SINGLE_BACKEND_NAME = "default";

/** Whether the config uses named backends (`storage.backends`) rather than a single one. */
export function usesNamedBackends(config: Config): boolean {
  return config.storage.backends.length > 0;
}

export function defaultBackendName(config: Config): string {
  const { backends, default_backend } = config.storage;
  if (backends.length === 0) return SINGLE_BACKEND_NAME;
  return default_backend ?? backends[0].name;
}

export function backendNames(config: Config): string[] {
  const { backends } = config.storage;
  return backends.length === 0 ? [SINGLE_BACKEND_NAME] : backends.map((backend) => backend.name);
}

/** How the single backend is configured, for messages. */
function singleBackendSource(config: Config): string {
  const { storage } = config;
  if (storage.s3 !== undefined) return "storage.s3";
  if (storage.backend !== undefined) return "storage.backend";
  if (storage.filesystem !== undefined) return "storage.filesystem";
  return "the default filesystem backend (./data)";
}

/** A backend as the admin API shows it: whether credentials are set, never their values. */
export function backendView(config: Config): Record<string, unknown>[] {
  const isDefault = (name: string) => name === defaultBackendName(config);
  const { storage } = config;
  if (storage.backends.length > 0) {
    return storage.backends.map((backend: NamedBackend) => ({
      name: backend.name,
      type: backend.type,
      ...(backend.type === "s3"
        ? {
          endpoint: backend.endpoint ?? null,
          region: backend.region,
          force_path_style: backend.force_path_style,
          credentials_set: !!(backend.access_key_id && backend.secret_access_key),
        }
        : { path: backend.path ?? null }),
      encryption: backend.encryption?.mode ?? "none",
      default: isDefault(backend.name),
    }));
  }
  const single = storage.s3 !== undefined
    ? {
      type: "s3",
      endpoint: storage.s3,
      region: storage.region ?? "us-east-1",
      force_path_style: storage.force_path_style ?? true,
      credentials_set: !!(storage.access_key_id && storage.secret_access_key),
    }
    : storage.backend !== undefined
    ? storage.backend.type === "s3"
      ? {
        type: "s3",
        endpoint: storage.backend.endpoint ?? null,
        region: storage.backend.region,
        force_path_style: storage.backend.force_path_style,
        credentials_set: !!(storage.backend.access_key_id && storage.backend.secret_access_key),
      }
      : { type: "filesystem", path: storage.backend.path ?? "./data" }
    : { type: "filesystem", path: storage.filesystem ?? "./data" };
  return [{
    name: SINGLE_BACKEND_NAME,
    ...single,
    encryption: storage.backend_encryption?.mode ?? "none",
    default: true,
    configured_as: singleBackendSource(config),
  }];
}

/** The 409 for adding or removing a backend while a single backend is configured. */
export function singleBackendConflict(config: Config, action: string): AdminError {
  return new AdminError(
    "conflict",
    `Cannot ${action}: this server runs one backend from ${singleBackendSource(config)}, not ` +
      "named backends. Convert first: move it into storage.backends as an entry named " +
      `"${SINGLE_BACKEND_NAME}" and set storage.default_backend: ${SINGLE_BACKEND_NAME} ` +
      "(PUT /config/section/storage); keep storage.filesystem if it is set, it stays the local " +
      "state directory. Then add backends here.",
  );
}

/** An error of the storage layer as an admin error (storage errors are S3 errors). */
export function adminErrorFromStorage(err: unknown, what: string): unknown {
  if (!(err instanceof SvcError)) return err;
  const message = `${what}: ${err.message}`;
  switch (err.code) {
    case "NoSuchBucket":
      return new AdminError("not_found", message);
    case "BucketAlreadyExists":
    case "BucketAlreadyOwnedByYou":
    case "BucketNotEmpty":
      return new AdminError("conflict", message);
    case "InvalidBucketName":
      return new AdminError("bad_request", message);
    case "ServiceUnavailable":
    case "SlowDown":
    case "InsufficientStorage":
      return new AdminError("unavailable", message);
    default:
      return new AdminError("bad_gateway", message);
  }
}

/** Runs `work` on `items`, at most `limit` at a time, keeping order. */
export async function mapLimited<T, R>(
  items: T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
