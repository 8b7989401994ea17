/**
 * A real admin app for the session route tests: real config DB file, real bootstrap password
 * (cost 4), real audit ring, the guard and routes mounted as the runtime will mount them. Only
 * the client address is set by a test middleware (from `x-test-ip`), standing in for the admin
 * app's client-IP middleware.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { type ConfigDb, openConfigDb } from "../../src/db/config-db.ts";
import { SessionStore } from "../../src/db/session-store.ts";
import { AuditRing } from "../../src/observability/audit-ring.ts";
import type { AuditFn } from "../../src/observability/audit-ring.ts";
import type { AdminEnv } from "../../src/admin/admin-env.ts";
import { renderAdminError } from "../../src/admin/admin-error.ts";
import { BootstrapPassword } from "../../src/admin/session/bootstrap-password.ts";
import { LoginLimiter } from "../../src/admin/session/login-limiter.ts";
import { requireSession, sessionGuard } from "../../src/admin/session/session-guard.ts";
import { sessionRoutes, whoamiHandler } from "../../src/admin/session/session-routes.ts";
import { AdminSessions, SESSION_COOKIE } from "../../src/admin/session/sessions.ts";

export const DEFAULT_IP = "10.0.0.1";

export interface Harness {
  app: Hono<AdminEnv>;
  db: ConfigDb;
  password: BootstrapPassword;
  /** The plaintext shown at first run (undefined when the hash came from elsewhere). */
  plain: string | undefined;
  sessions: AdminSessions;
  ring: AuditRing;
  clock: { now: number };
  request(
    method: string,
    path: string,
    options?: { body?: unknown; cookie?: string; ip?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  stateDir: string;
  env?: Record<string, string>;
  secureCookies?: boolean | "auto";
  ttlHours?: number;
  clock?: { now: number };
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const clock = options.clock ?? { now: Date.UTC(2026, 10, 24, 12) };
  const now = () => clock.now;
  const shown: string[] = [];
  const password = await BootstrapPassword.resolve({
    env: options.env ?? {},
    configHash: undefined,
    stateDir: options.stateDir,
    bcryptCost: 4,
    announce: (text) => shown.push(text),
  });
  const plain = shown[0]?.match(/^ {4}(\S+)$/m)?.[1];
  const db = await openConfigDb({ dir: options.stateDir, passwordHash: password.hash, now });
  const sessions = new AdminSessions({
    store: new SessionStore(db),
    passwordHash: () => password.hash,
    settings: () => ({
      ttlHours: options.ttlHours ?? 4,
      secureCookies: options.secureCookies ?? true,
    }),
    now,
  });
  const ring = new AuditRing({ now });
  const audit: AuditFn = (event, fields, level) => void ring.record(event, fields, level);
  const limiter = new LoginLimiter({ now });

  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.use("*", async (c, next) => {
    c.set("clientIp", c.req.header("x-test-ip") ?? DEFAULT_IP);
    c.set("https", c.req.header("x-test-https") === "true");
    c.set("requestId", crypto.randomUUID());
    await next();
  });
  const admin = new Hono<AdminEnv>();
  admin.use("*", sessionGuard({ sessions, audit }));
  admin.route("/", sessionRoutes({ sessions, password, db, limiter, audit }));
  // A stand-in for every other admin route: needs a session, echoes who called.
  admin.all("/echo", (c) => c.json({ principal: c.var.principal }));
  app.route("/_/api/admin", admin);
  app.get("/_/api/whoami", whoamiHandler({ sessions, version: "9.9.9" }));
  app.get("/_/stats", requireSession({ sessions, audit }), (c) => c.json({ stats: true }));

  return {
    app,
    db,
    password,
    plain,
    sessions,
    ring,
    clock,
    request(method, path, { body, cookie, ip, headers = {} } = {}) {
      const all: Record<string, string> = { ...headers };
      if (body !== undefined) all["content-type"] = "application/json";
      if (cookie !== undefined) all.cookie = `${SESSION_COOKIE}=${cookie}`;
      if (ip !== undefined) all["x-test-ip"] = ip;
      return Promise.resolve(app.request(`http://svc.test:9000${path}`, {
        method,
        headers: all,
        body: body === undefined ? undefined : JSON.stringify(body),
      }));
    },
    close: () => db.close(),
  };
}

/** The session cookie value a response sets (undefined when it sets none). */
export function cookieOf(response: Response): string | undefined {
  const header = response.headers.get("set-cookie") ?? "";
  return header.match(new RegExp(`^${SESSION_COOKIE}=([^;]*)`))?.[1];
}

export async function withHarness(
  fn: (h: Harness, stateDir: string) => Promise<void>,
  options: { secureCookies?: boolean | "auto"; env?: Record<string, string> } = {},
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "svc-sessions-" });
  const stateDir = `${root}/.svc`;
  const h = await startHarness({ stateDir, ...options });
  try {
    await fn(h, stateDir);
  } finally {
    await h.close();
    await Deno.remove(root, { recursive: true });
  }
}

export async function login(h: Harness, password = h.plain!, ip?: string): Promise<string> {
  const response = await h.request("POST", "/_/api/admin/login", { body: { password }, ip });
  assert.equal(response.status, 200, await response.clone().text());
  const cookie = cookieOf(response);
  assert.ok(cookie, "login sets the session cookie");
  return cookie;
}

export function events(h: Harness): string[] {
  return h.ring.snapshot().map((entry) => entry.event).reverse();
}
