/**
 * An admin API client for black-box tests: logs in with the bootstrap password every test server
 * is given (tests/helpers/svc.ts sets its hash), keeps the session cookie, and sends JSON.
 */
export const ADMIN_PASSWORD = "test-admin-password-123";
/** bcrypt of ADMIN_PASSWORD at cost 4 (the minimum: tests log in often). */
export const ADMIN_PASSWORD_HASH = "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S";

export class AdminClient {
  readonly base: string;
  cookie: string | null = null;
  /** Extra headers on every request (e.g. X-Forwarded-For in IP-binding tests). */
  headers: Record<string, string> = {};

  constructor(serverUrl: string) {
    this.base = `${serverUrl}/_/api/admin`;
  }

  /** Logs in; throws unless the server set a session cookie. */
  async login(password = ADMIN_PASSWORD): Promise<Response> {
    const response = await this.request("POST", "/login", { password });
    if (response.status !== 200) {
      throw new Error(`Login failed: ${response.status} ${await response.text()}`);
    }
    await response.body?.cancel();
    return response;
  }

  /** Sends a request under the admin prefix (or an absolute `/_/…` path); keeps a new cookie. */
  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const url = path.startsWith("/_/")
      ? `${this.base.replace(/\/_\/api\/admin$/, "")}${path}`
      : `${this.base}${path}`;
    const all: Record<string, string> = { ...this.headers, ...headers };
    if (this.cookie) all.cookie = this.cookie;
    let payload: BodyInit | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      all["content-type"] ??= "application/json";
    }
    const response = await fetch(url, { method, headers: all, body: payload });
    const setCookie = response.headers.get("set-cookie");
    if (setCookie) {
      const pair = setCookie.split(";")[0];
      this.cookie = /=\s*$/.test(pair) || /max-age=0/i.test(setCookie) ? null : pair;
    }
    return response;
  }

  /** Sends and parses a JSON answer, asserting the status. */
  async json<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    expectStatus = 200,
  ): Promise<T> {
    const response = await this.request(method, path, body);
    const text = await response.text();
    if (response.status !== expectStatus) {
      throw new Error(
        `${method} ${path}: expected ${expectStatus}, got ${response.status}: ${text}`,
      );
    }
    return JSON.parse(text) as T;
  }

  /**
   * The job's row once it has ended (succeeded, failed or cancelled), polled; `onRow` sees every
   * row on the way (phases a test waits out).
   */
  async jobEnded(
    id: string,
    ms = 90_000,
    onRow?: (row: Record<string, unknown>) => void,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const row = await this.json("GET", `/jobs/${id}`);
      onRow?.(row);
      if (JOB_ENDED.includes(String(row.status))) return row;
      if (Date.now() > deadline) throw new Error(`Timed out waiting for job ${id} to end`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** The statuses of a job that has ended. */
export const JOB_ENDED = ["succeeded", "failed", "cancelled"];
