/**
 * Where `svc admin login` keeps its session: a JSON file readable by its owner only (mode 0600),
 * since the cookie in it is as good as the password until it expires. Path: `--session-file`,
 * else `SVC_ADMIN_SESSION_FILE`, else `$XDG_CONFIG_HOME/svc/admin-session.json`, else
 * `$HOME/.config/svc/admin-session.json`.
 *
 * Written to a temporary file created 0600 and renamed over the old one, so the secret is never
 * in a wider file, even for a moment. A file found wider (another tool, a copy) is narrowed to
 * 0600 before it is read, with a warning: the secret may have been readable by others.
 */
import { ADMIN_EXIT, AdminCliError } from "./exit-codes.ts";

export interface StoredSession {
  /** The server's base URL the cookie belongs to. */
  server: string;
  /** `name=value` pairs for the Cookie header. */
  cookie: string;
  user: string;
  expires_at: string | null;
  created_at: string;
}

const FILE_NAME = "admin-session.json";

/** The session file's path for these options and this environment. */
export function sessionPath(
  env: Record<string, string | undefined>,
  flag: string | undefined,
): string {
  if (flag) return flag;
  if (env.SVC_ADMIN_SESSION_FILE) return env.SVC_ADMIN_SESSION_FILE;
  if (env.XDG_CONFIG_HOME) return `${env.XDG_CONFIG_HOME}/svc/${FILE_NAME}`;
  if (env.HOME) return `${env.HOME}/.config/svc/${FILE_NAME}`;
  throw new AdminCliError(
    ADMIN_EXIT.usage,
    "Cannot place the session file: set HOME, XDG_CONFIG_HOME or --session-file",
  );
}

const dirOf = (path: string) => path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : ".";

function isSession(value: unknown): value is StoredSession {
  const v = value as Record<string, unknown>;
  return !!v && typeof v === "object" && typeof v.server === "string" &&
    typeof v.cookie === "string" && typeof v.user === "string";
}

/**
 * The stored session, or null when there is none. `warn` hears about a file that was wider than
 * 0600 (narrowed here before reading).
 */
export async function readSession(
  path: string,
  warn: (line: string) => void,
): Promise<StoredSession | null> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw new AdminCliError(
      ADMIN_EXIT.failed,
      `Cannot read session file "${path}": ${(err as Error).message}`,
    );
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    await Deno.chmod(path, 0o600);
    warn(
      `warning: session file "${path}" was mode ${
        (info.mode & 0o777).toString(8)
      }; narrowed to 600 (run svc admin login again if others could read it)`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await Deno.readTextFile(path));
  } catch (err) {
    throw new AdminCliError(
      ADMIN_EXIT.auth,
      `Session file "${path}" is not readable JSON (${
        (err as Error).message
      }); run svc admin login`,
    );
  }
  if (!isSession(parsed)) {
    throw new AdminCliError(ADMIN_EXIT.auth, `Session file "${path}" is not a session; log in`);
  }
  return parsed;
}

/** Writes the session 0600 (temporary file + rename); the folder is created 0700. */
export async function writeSession(path: string, session: StoredSession): Promise<void> {
  const dir = dirOf(path);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = `${path}.tmp-${Deno.pid}`;
  try {
    await Deno.writeTextFile(temp, JSON.stringify(session, null, 2) + "\n", {
      mode: 0o600,
      createNew: true,
    });
    // The umask may only narrow `mode`; chmod makes it exactly 0600.
    await Deno.chmod(temp, 0o600);
    await Deno.rename(temp, path);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw new AdminCliError(
      ADMIN_EXIT.failed,
      `Cannot write session file "${path}": ${(err as Error).message}`,
    );
  }
}

/** Removes the session file; true when there was one. */
export async function removeSession(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
