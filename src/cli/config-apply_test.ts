/**
 * `svc config apply` against a real HTTP server started here: a Hono app on Deno.serve with a
 * login route that sets a session cookie, a session guard, and the real config routes over a
 * recording ConfigPort that runs the real validation. One run goes through main.ts as a
 * subprocess, as an operator runs it.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { FakeConfigPort } from "../../tests/helpers/fake-config-port.ts";
import { runSvc } from "../../tests/helpers/run-svc.ts";
import type { AdminEnv } from "../admin/admin-env.ts";
import { AdminError, jsonBody, renderAdminError } from "../admin/admin-error.ts";
import { configRoutes } from "../admin/config/config-routes.ts";
import { APPLY_EXIT, configApply } from "./config-apply.ts";

const PASSWORD = "correct horse battery staple";

const DOCUMENT = {
  access: { access_key_id: "AKIAOPERATOR", secret_access_key: "operator-secret-123" },
  advanced: { log_level: "info" },
};

const FILE = `access:
  access_key_id: AKIAOPERATOR
advanced:
  log_level: debug
  listen_addr: 127.0.0.1:9999
`;

interface Server {
  url: string;
  port: FakeConfigPort;
  logins: number;
  logouts: number;
  close: () => Promise<void>;
}

function startServer(): Server {
  const port = new FakeConfigPort(DOCUMENT);
  const sessions = new Set<string>();
  const state = { logins: 0, logouts: 0 };
  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.use("*", async (c, next) => {
    c.set("clientIp", "127.0.0.1");
    c.set("requestId", "r");
    await next();
  });
  app.post("/_/api/admin/login", async (c) => {
    state.logins++;
    const body = await jsonBody(c);
    if (body.password !== PASSWORD) throw new AdminError("unauthorized", "Wrong password");
    const token = crypto.randomUUID();
    sessions.add(token);
    setCookie(c, "svc_session", token, { httpOnly: true, sameSite: "Strict", path: "/" });
    return c.json({ ok: true });
  });
  app.use("/_/api/admin/*", async (c, next) => {
    const token = getCookie(c, "svc_session");
    if (token === undefined || !sessions.has(token)) {
      throw new AdminError("unauthorized", "Log in first");
    }
    c.set("principal", { user: "$bootstrap", admin: true, sessionId: token });
    await next();
  });
  app.post("/_/api/admin/logout", (c) => {
    state.logouts++;
    sessions.delete(getCookie(c, "svc_session") ?? "");
    return c.json({ ok: true });
  });
  app.route("/_/api/admin", configRoutes({ config: port, audit: () => {} }));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    port,
    get logins() {
      return state.logins;
    },
    get logouts() {
      return state.logouts;
    },
    close: () => server.shutdown(),
  };
}

async function withFile<T>(text: string, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "svc-apply-test-" });
  try {
    await Deno.writeTextFile(`${dir}/svc.yaml`, text);
    return await fn(`${dir}/svc.yaml`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function run(
  args: string[],
  env: Record<string, string> = { SVC_BOOTSTRAP_PASSWORD: PASSWORD },
) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await configApply(args, {
    env,
    stdout: (line) => out.push(line),
    stderr: (line) => err.push(line),
  });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

Deno.test("config apply: logs in, applies and persists, secrets kept, logs out", async () => {
  const server = startServer();
  try {
    await withFile(FILE, async (file) => {
      const result = await run([file, "--server", server.url]);
      assert.equal(result.code, APPLY_EXIT.ok, result.stderr);
      assert.match(result.stdout, /applied: .*advanced\.log_level/);
      assert.match(result.stdout, /requires restart: advanced\.listen_addr/);
      assert.match(result.stdout, /persisted to \/etc\/svc\/config\.yaml/);
      const [request] = server.port.liveRequests;
      assert.equal(request.persist, true);
      const sent = request.document as typeof DOCUMENT;
      assert.equal(sent.advanced.log_level, "debug");
      assert.equal(sent.access.secret_access_key, "operator-secret-123");
      assert.equal(server.port.current().advanced.log_level, "debug");
      assert.equal(server.logouts, 1);
    });
  } finally {
    await server.close();
  }
});

Deno.test("config apply --dry-run validates only", async () => {
  const server = startServer();
  try {
    await withFile(FILE, async (file) => {
      const result = await run([file, "--server", `${server.url}/`, "--dry-run"]);
      assert.equal(result.code, APPLY_EXIT.ok, result.stderr);
      assert.match(result.stdout, /valid \(nothing changed\)/);
      assert.equal(server.port.liveRequests.length, 0);
      assert.equal(server.port.requests.length, 1);
    });
  } finally {
    await server.close();
  }
});

Deno.test("config apply: no password, wrong password", async () => {
  const server = startServer();
  try {
    await withFile(FILE, async (file) => {
      const none = await run([file, "--server", server.url], {});
      assert.equal(none.code, APPLY_EXIT.auth);
      assert.match(none.stderr, /SVC_BOOTSTRAP_PASSWORD is not set/);
      assert.equal(server.logins, 0, "nothing is sent without a password");
      const wrong = await run([file, "--server", server.url], { SVC_BOOTSTRAP_PASSWORD: "nope" });
      assert.equal(wrong.code, APPLY_EXIT.auth);
      assert.match(wrong.stderr, /Login refused: Wrong password \(HTTP 401 unauthorized\)/);
      assert.equal(server.port.requests.length, 0);
    });
  } finally {
    await server.close();
  }
});

Deno.test("config apply: an invalid config shows the server's message, exit 6", async () => {
  const server = startServer();
  try {
    await withFile("advanced:\n  listen_addr: nowhere\n", async (file) => {
      const result = await run([file, "--server", server.url]);
      assert.equal(result.code, APPLY_EXIT.validation);
      assert.match(result.stderr, /Invalid config: advanced\.listen_addr: expected host:port/);
      assert.equal(server.port.current().advanced.listen_addr, "0.0.0.0:9000");
    });
  } finally {
    await server.close();
  }
});

Deno.test("config apply: the server failing to persist is exit 1 with its message", async () => {
  const server = startServer();
  server.port.failPersist = true;
  try {
    await withFile(FILE, async (file) => {
      const result = await run([file, "--server", server.url]);
      assert.equal(result.code, APPLY_EXIT.server);
      assert.match(result.stderr, /Apply failed: .*read-only file system.*HTTP 500 persist_failed/);
    });
  } finally {
    await server.close();
  }
});

Deno.test("config apply: server unreachable, unreadable file, not YAML, usage", async () => {
  const closed = startServer();
  const url = closed.url;
  await closed.close();
  await withFile(FILE, async (file) => {
    const unreachable = await run([file, "--server", url]);
    assert.equal(unreachable.code, APPLY_EXIT.unreachable);
    assert.match(unreachable.stderr, /Cannot reach the server at http:\/\/127\.0\.0\.1:\d+/);
  });
  const missing = await run(["/nonexistent/svc.yaml", "--server", url]);
  assert.equal(missing.code, APPLY_EXIT.io);
  assert.match(missing.stderr, /Cannot read config file "\/nonexistent\/svc\.yaml"/);
  await withFile("access: [unclosed\n", async (file) => {
    const parse = await run([file, "--server", url]);
    assert.equal(parse.code, APPLY_EXIT.parse);
    assert.match(parse.stderr, /at line \d+, column \d+/);
  });
  for (
    const args of [[], ["f.yaml"], ["f.yaml", "--server", "ftp://x"], ["a", "b", "--server", url]]
  ) {
    const usage = await run(args);
    assert.equal(usage.code, APPLY_EXIT.usage, args.join(" "));
    assert.match(usage.stderr, /Usage: svc config apply/);
  }
});

Deno.test("svc config apply through main.ts (subprocess)", async () => {
  const server = startServer();
  try {
    const result = await runSvc(
      ["config", "apply", "svc.yaml", "--server", server.url],
      { "svc.yaml": FILE },
      { SVC_BOOTSTRAP_PASSWORD: PASSWORD },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /persisted to/);
    assert.equal(server.port.current().advanced.log_level, "debug");
  } finally {
    await server.close();
  }
});
