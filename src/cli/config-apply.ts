/**
 * `svc config apply <file> --server <url> [--dry-run]`: sends a config file to a running svc,
 * which validates it, applies it live and persists it to its own config file (the same path as
 * `POST /_/api/admin/config/apply`; `--dry-run` uses `/config/validate` and changes nothing).
 *
 * It logs in with the bootstrap password from `SVC_BOOTSTRAP_PASSWORD` (`POST /login`), keeps the
 * session cookie for the apply request and logs out afterwards. The file is sent as written:
 * `${env:NAME}` placeholders are not expanded on this side (the server keeps them in its file and
 * expands them when it loads it), and secrets the file leaves out are kept by the server.
 *
 * Exit codes: 0 applied (or valid, with --dry-run); 1 the server failed (e.g. it could not write
 * its config file); 2 usage; 3 the file cannot be read; 4 it is not YAML; 6 the server found the
 * config invalid (its message is shown); 7 no password set, or login refused; 8 the server
 * cannot be reached.
 */
import { parseDocument } from "../config/mod.ts";
import type { CommandIo } from "./command-io.ts";

export const APPLY_EXIT = {
  ok: 0,
  server: 1,
  usage: 2,
  io: 3,
  parse: 4,
  validation: 6,
  auth: 7,
  unreachable: 8,
} as const;

export const APPLY_USAGE =
  "svc config apply <file> --server <url> [--dry-run]   (password from SVC_BOOTSTRAP_PASSWORD)";

const ADMIN = "/_/api/admin";
/** How long one request to the server may take before it counts as unreachable. */
const REQUEST_TIMEOUT_MS = 30_000;

interface ApplyArgs {
  file: string;
  server: URL;
  dryRun: boolean;
}

/** A failure with its exit code; the message is printed after "svc: ". */
class ApplyFailure extends Error {
  constructor(readonly exitCode: number, message: string) {
    super(message);
  }
}

function parseApplyArgs(args: string[]): ApplyArgs {
  let file: string | undefined;
  let server: string | undefined;
  let dryRun = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--server") {
      server = args[++i];
      if (!server) throw new ApplyFailure(APPLY_EXIT.usage, "--server needs a URL");
    } else if (arg.startsWith("--server=")) server = arg.slice("--server=".length);
    else if (arg === "--dry-run") dryRun = true;
    else if (arg.startsWith("-") || file !== undefined) {
      throw new ApplyFailure(APPLY_EXIT.usage, `Unexpected argument "${arg}"`);
    } else file = arg;
  }
  if (file === undefined) throw new ApplyFailure(APPLY_EXIT.usage, "config apply needs a file");
  if (!server) throw new ApplyFailure(APPLY_EXIT.usage, "config apply needs --server <url>");
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new ApplyFailure(APPLY_EXIT.usage, `--server must be a URL, got "${server}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ApplyFailure(APPLY_EXIT.usage, `--server must be http(s)://, got "${server}"`);
  }
  return { file, server: url, dryRun };
}

/** `POST <server>/_/api/admin<path>` with a JSON body; unreachable servers become exit 8. */
async function post(
  server: URL,
  path: string,
  body: unknown,
  cookie?: string,
): Promise<{ status: number; json: Record<string, unknown>; response: Response }> {
  const url = new URL(`${server.pathname.replace(/\/+$/, "")}${ADMIN}${path}`, server);
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(cookie ? { cookie } : {}),
      },
      body: JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ApplyFailure(
      APPLY_EXIT.unreachable,
      `Cannot reach the server at ${server.origin}: ${(err as Error).message}`,
    );
  }
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    const parsed = text === "" ? {} : JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) json = parsed;
  } catch {
    json = { message: text.slice(0, 200) };
  }
  return { status: response.status, json, response };
}

/** The server's `{error, message}` as one line. */
function serverMessage(status: number, json: Record<string, unknown>): string {
  const message = typeof json.message === "string" ? json.message : "(no message)";
  return `${message} (HTTP ${status}${typeof json.error === "string" ? ` ${json.error}` : ""})`;
}

/** The `name=value` pairs of the login response's cookies, as a Cookie header. */
function sessionCookie(response: Response): string {
  return response.headers.getSetCookie()
    .map((line) => line.split(";")[0].trim())
    .filter((pair) => pair.includes("="))
    .join("; ");
}

async function login(server: URL, password: string): Promise<string> {
  const { status, json, response } = await post(server, "/login", { password });
  if (status === 401 || status === 403 || status === 429) {
    const retry = typeof json.retry_after_secs === "number"
      ? `; retry in ${json.retry_after_secs} s`
      : "";
    throw new ApplyFailure(
      APPLY_EXIT.auth,
      `Login refused: ${serverMessage(status, json)}${retry}`,
    );
  }
  if (status < 200 || status > 299) {
    throw new ApplyFailure(APPLY_EXIT.server, `Login failed: ${serverMessage(status, json)}`);
  }
  const cookie = sessionCookie(response);
  if (cookie === "") {
    throw new ApplyFailure(APPLY_EXIT.server, "Login answered without a session cookie");
  }
  return cookie;
}

function list(values: unknown): string[] {
  return Array.isArray(values) ? values.map(String) : [];
}

/** `svc config apply …`; returns the exit code. */
export async function configApply(args: string[], io: CommandIo): Promise<number> {
  try {
    const { file, server, dryRun } = parseApplyArgs(args);
    const password = io.env.SVC_BOOTSTRAP_PASSWORD;
    if (!password) {
      throw new ApplyFailure(
        APPLY_EXIT.auth,
        "SVC_BOOTSTRAP_PASSWORD is not set; export the bootstrap password to log in",
      );
    }
    let yaml: string;
    try {
      yaml = await Deno.readTextFile(file);
    } catch (err) {
      throw new ApplyFailure(
        APPLY_EXIT.io,
        `Cannot read config file "${file}": ${(err as Error).message}`,
      );
    }
    try {
      parseDocument(yaml, file);
    } catch (err) {
      throw new ApplyFailure(APPLY_EXIT.parse, (err as Error).message);
    }
    const cookie = await login(server, password);
    try {
      const route = dryRun ? "/config/validate" : "/config/apply";
      const { status, json } = await post(server, route, { yaml }, cookie);
      if (status === 422) {
        throw new ApplyFailure(APPLY_EXIT.validation, `Invalid config: ${json.message ?? ""}`);
      }
      if (status === 401 || status === 403) {
        throw new ApplyFailure(APPLY_EXIT.auth, `Refused: ${serverMessage(status, json)}`);
      }
      if (status < 200 || status > 299) {
        throw new ApplyFailure(APPLY_EXIT.server, `Apply failed: ${serverMessage(status, json)}`);
      }
      for (const warning of list(json.warnings)) io.stderr(`warning: ${warning}`);
      const applied = list(json.applied);
      const restart = list(json.requires_restart);
      if (dryRun) io.stdout(`valid (nothing changed)`);
      else io.stdout(applied.length > 0 ? `applied: ${applied.join(", ")}` : "applied: no changes");
      if (restart.length > 0) io.stdout(`requires restart: ${restart.join(", ")}`);
      if (json.persisted === true) io.stdout(`persisted to ${json.persisted_path}`);
      return APPLY_EXIT.ok;
    } finally {
      // Best effort: the session would expire anyway; a failure here changes no outcome.
      await post(server, "/logout", {}, cookie).catch(() => undefined);
    }
  } catch (err) {
    if (!(err instanceof ApplyFailure)) throw err;
    io.stderr(`svc: ${err.message}`);
    if (err.exitCode === APPLY_EXIT.usage) io.stderr(`Usage: ${APPLY_USAGE}`);
    return err.exitCode;
  }
}
