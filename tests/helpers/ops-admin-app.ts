/**
 * Test support for the admin route files of the ops area (logs, audit, stats, backends,
 * buckets): a real Hono app with the admin error renderer and the context the admin app sets,
 * and a ConfigPort whose `apply` runs the REAL config validation (the runtime provides the real
 * port; this one keeps the document in memory and records what it was asked).
 */
import { Hono } from "hono";
import type { AdminEnv, AdminPrincipal } from "../../src/admin/admin-env.ts";
import { renderAdminError } from "../../src/admin/admin-error.ts";
import type { ApplyOutcome, ApplyRequest, ConfigPort } from "../../src/admin/admin-deps.ts";
import { type Config, validateConfigWithWarnings } from "../../src/config/schema.ts";

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

/** Audit calls recorded as the AuditFn receives them. */
export function recordingAudit() {
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  return {
    events,
    audit: (event: string, fields: Record<string, unknown>) => {
      events.push({ event, fields });
    },
  };
}
