/**
 * Test support for the admin route files of the ops area (logs, audit, stats, backends,
 * buckets): a real Hono app with the admin error renderer and the context the admin app sets,
 * and a ConfigPort whose `apply` runs the REAL config validation (the runtime provides the real
 * port; this one keeps the document in memory and records what it was asked).
 */
import { Hono } from "hono";
import type { AdminEnv, AdminPrincipal } from "../../src/admin/admin-env.ts";
import { renderAdminError } from "../../src/admin/admin-error.ts";
import type { ApplyOutcome, ApplyRequest, ConfigPort } from "../../src/config/config-port.ts";
import type { StorageView } from "../../src/admin/storage/storage-admin.ts";
import { type Config, validateConfigWithWarnings } from "../../src/config/schema/schema.ts";
import type { Backend } from "../../src/storage/backend.ts";
import type { ObjectService } from "../../src/objects/object-service.ts";
import { BucketRouter } from "../../src/storage/bucket-router.ts";
import { FilesystemBackend } from "../../src/storage/fs/filesystem-backend.ts";
import { S3Backend } from "../../src/storage/s3/s3-backend.ts";
import { s3OptionsFromConfig } from "../../src/storage/s3/s3-options.ts";

export const TEST_CLIENT_IP = "203.0.113.7";
export const TEST_PRINCIPAL: AdminPrincipal = {
  user: "$bootstrap",
  admin: true,
  sessionId: "session-1",
};

/** An admin app as the lead mounts it: error renderer, client IP and principal set. */
export function opsAdminApp(mount: (app: Hono<AdminEnv>) => void): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.use("*", async (c, next) => {
    c.set("clientIp", TEST_CLIENT_IP);
    c.set("requestId", crypto.randomUUID());
    c.set("principal", TEST_PRINCIPAL);
    await next();
  });
  mount(app);
  return app;
}

/** A ConfigPort over an in-memory document; validation is the real one. */
export class MemoryConfigPort implements ConfigPort {
  #document: Record<string, unknown>;
  #current: Config;
  readonly requests: ApplyRequest[] = [];
  /** Called after a successful non-dry-run apply (tests rebuild their storage there). */
  onApplied?: (config: Config) => void | Promise<void>;
  /** When set, a non-dry-run apply throws it (a persist failure) and changes nothing. */
  failNextApply?: Error;

  constructor(document: Record<string, unknown>) {
    this.#document = structuredClone(document);
    this.#current = validateConfigWithWarnings(this.#document).config;
  }

  current(): Config {
    return this.#current;
  }

  document(): Record<string, unknown> {
    return structuredClone(this.#document);
  }

  /** Non-dry-run applies so far. */
  get applied(): ApplyRequest[] {
    return this.requests.filter((request) => !request.dryRun);
  }

  async apply(request: ApplyRequest): Promise<ApplyOutcome> {
    this.requests.push(structuredClone(request));
    const { config, warnings } = validateConfigWithWarnings(structuredClone(request.document));
    if (request.dryRun) {
      return {
        applied: [],
        requires_restart: [],
        warnings,
        persisted: false,
        persisted_path: null,
      };
    }
    if (this.failNextApply) {
      const err = this.failNextApply;
      this.failNextApply = undefined;
      throw err;
    }
    this.#document = structuredClone(request.document);
    this.#current = config;
    await this.onApplied?.(config);
    return {
      applied: ["storage"],
      requires_restart: [],
      warnings,
      persisted: request.persist,
      persisted_path: request.persist ? "/tmp/svc-test.yaml" : null,
    };
  }
}

/**
 * The storage the runtime would build from a config, for the backend and bucket routes: the
 * named backends opened for real (filesystem, or S3 through the project's S3 backend) under a
 * real BucketRouter. `rebuild` follows a config change as the storage stack does.
 */
export class TestStorage {
  readonly backends = new Map<string, Backend>();
  #opened = new Map<string, string>();
  router!: BucketRouter;

  constructor(readonly port: MemoryConfigPort, readonly spoolRoot: string) {}

  static async open(port: MemoryConfigPort, spoolRoot: string): Promise<TestStorage> {
    const storage = new TestStorage(port, spoolRoot);
    await storage.rebuild(port.current());
    port.onApplied = (config) => storage.rebuild(config);
    return storage;
  }

  async rebuild(config: Config): Promise<void> {
    const specs = config.storage.backends.length > 0 ? config.storage.backends : [{
      name: "default",
      type: "filesystem" as const,
      path: config.storage.filesystem ?? "./data",
    }];
    for (const name of [...this.backends.keys()]) {
      if (!specs.some((spec) => spec.name === name)) {
        this.backends.delete(name);
        this.#opened.delete(name);
      }
    }
    for (const spec of specs) {
      const fingerprint = JSON.stringify(spec);
      if (this.#opened.get(spec.name) === fingerprint) continue;
      const backend = spec.type === "filesystem"
        ? await FilesystemBackend.open(spec.path!)
        : await S3Backend.open(
          s3OptionsFromConfig(spec, config.advanced, `${this.spoolRoot}/${spec.name}`),
        );
      this.backends.set(spec.name, backend);
      this.#opened.set(spec.name, fingerprint);
    }
    const defaultName = config.storage.backends.length > 0
      ? config.storage.default_backend ?? config.storage.backends[0].name
      : "default";
    this.router = new BucketRouter(
      [...this.backends].map(([name, backend]) => ({ name, backend, available: () => true })),
      defaultName,
      () => ({
        policies: this.port.current().storage.buckets,
        listTimeoutMs: 5000,
        listCooldownMs: 0,
        listFreshMs: 0,
      }),
    );
  }

  view(): StorageView {
    return { router: this.router, backends: this.backends, available: () => true };
  }
}

/** Stores a `size`-byte object of zeros through the object service (usage and stats tests). */
export async function putZeros(
  objects: Pick<ObjectService, "put">,
  bucket: string,
  key: string,
  size: number,
): Promise<void> {
  await objects.put(bucket, key, new Blob([new Uint8Array(size)]).stream(), {
    metadata: { userMeta: {}, headers: {} },
    contentLength: size,
  });
}
