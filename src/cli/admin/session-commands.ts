/**
 * `svc admin login | logout | whoami`. Login takes the bootstrap password (`POST /login`) or an
 * IAM user's access key pair (`POST /login-as`, a user holding `admin`), and keeps the session
 * cookie in the session file (session-file.ts, mode 0600). Secrets never come from the command
 * line (they would sit in shell history and `ps`): stdin, the environment, or a prompt.
 */
import { flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { fields, humanTime } from "./format.ts";
import { AdminHttp, apiErrorLine, cookieOf, type Json } from "./http-client.ts";
import { readSession, removeSession, writeSession } from "./session-file.ts";

/** A secret from stdin (first line), else the first set variable, else a prompt. */
async function secretFrom(
  ctx: AdminContext,
  fromStdin: boolean,
  variables: string[],
  label: string,
  hint: string,
): Promise<string> {
  if (fromStdin) {
    const line = (await ctx.io.readStdin()).split(/\r?\n/)[0];
    if (line === "") throw usageError(`stdin held no ${label}`);
    return line;
  }
  for (const name of variables) {
    const value = ctx.io.env[name];
    if (value) return value;
  }
  const typed = await ctx.io.promptSecret(`${label}: `);
  if (typed) return typed;
  throw usageError(`No ${label} given: ${hint}`);
}

async function login(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const keyId = flagString(args, "access-key-id") ?? ctx.io.env.SVC_ADMIN_ACCESS_KEY_ID;
  const http = ctx.anonymous();
  let route: string;
  let body: Json;
  if (keyId) {
    const secret = await secretFrom(
      ctx,
      args.flags["secret-stdin"] === true,
      ["SVC_ADMIN_SECRET_ACCESS_KEY"],
      "secret access key",
      "use --secret-stdin or set SVC_ADMIN_SECRET_ACCESS_KEY",
    );
    route = "/login-as";
    body = { access_key_id: keyId, secret_access_key: secret };
  } else {
    if (args.flags["secret-stdin"]) throw usageError("--secret-stdin needs --access-key-id");
    const password = await secretFrom(
      ctx,
      args.flags["password-stdin"] === true,
      ["SVC_ADMIN_PASSWORD", "SVC_BOOTSTRAP_PASSWORD"],
      "password",
      "use --password-stdin or set SVC_ADMIN_PASSWORD (or --access-key-id for IAM keys)",
    );
    route = "/login";
    body = { password };
  }
  const response = await http.send("POST", route, { json: body });
  if (!response.ok) {
    const line = apiErrorLine(response.status, await response.text());
    const refused = [400, 401, 403, 429].includes(response.status);
    throw new AdminCliError(
      refused ? ADMIN_EXIT.auth : ADMIN_EXIT.failed,
      `Login ${refused ? "refused" : "failed"}: ${line}`,
    );
  }
  const answer = await response.json() as Json;
  const cookie = cookieOf(response);
  if (cookie === "") throw new AdminCliError(ADMIN_EXIT.failed, "Login answered without a cookie");
  await writeSession(ctx.sessionPath, {
    server: ctx.server.href,
    cookie,
    user: String(answer.user),
    expires_at: typeof answer.expires_at === "string" ? answer.expires_at : null,
    created_at: new Date().toISOString(),
  });
  if (ctx.json) ctx.printJson(answer);
  else {
    ctx.io.stdout(
      `Logged in to ${ctx.server.origin} as ${answer.user} until ${humanTime(answer.expires_at)}`,
    );
    ctx.io.stdout(`Session kept in ${ctx.sessionPath} (mode 600)`);
  }
  return ADMIN_EXIT.ok;
}

async function logout(ctx: AdminContext): Promise<number> {
  const stored = await readSession(ctx.sessionPath, ctx.io.stderr);
  if (stored === null) {
    if (!ctx.json) ctx.io.stdout("Not logged in (no session file)");
    else ctx.printJson({ ok: true, logged_out: false });
    return ADMIN_EXIT.ok;
  }
  // The file goes first: whatever the server says, this shell no longer holds the session.
  await removeSession(ctx.sessionPath);
  const http = new AdminHttp(new URL(stored.server), stored.cookie);
  const response = await http.send("POST", "/logout");
  await response.body?.cancel();
  const ended = response.ok;
  if (ctx.json) ctx.printJson({ ok: true, logged_out: true, server_session_ended: ended });
  else {ctx.io.stdout(
      `Logged out of ${stored.server}${ended ? "" : " (the server had no session)"}`,
    );}
  return ADMIN_EXIT.ok;
}

async function whoami(ctx: AdminContext): Promise<number> {
  const http = await ctx.session();
  const who = await http.json<Json>("GET", "/_/api/whoami");
  if (who.user === null || who.user === undefined) {
    throw new AdminCliError(
      ADMIN_EXIT.auth,
      `The session in "${ctx.sessionPath}" is no longer valid: run svc admin login`,
    );
  }
  const stored = await readSession(ctx.sessionPath, ctx.io.stderr);
  if (ctx.json) {
    ctx.printJson({ ...who, server: ctx.server.href, expires_at: stored?.expires_at ?? null });
    return ADMIN_EXIT.ok;
  }
  for (
    const line of fields([
      ["user", who.user],
      ["server", ctx.server.origin],
      ["version", who.version],
      ["mode", who.mode],
      ["expires", humanTime(stored?.expires_at)],
      ["session file", ctx.sessionPath],
    ])
  ) ctx.io.stdout(line);
  return ADMIN_EXIT.ok;
}

export const SESSION_GROUPS: AdminGroup[] = [
  {
    name: "login",
    summary: "log in and keep the session",
    commands: [{
      name: "",
      usage: "[--password-stdin | --access-key-id <id> [--secret-stdin]]",
      summary: "Logs in with the bootstrap password, or with an IAM admin user's key pair, and " +
        "keeps the session in the session file (mode 600).",
      details: [
        "  --password-stdin       read the password from stdin (else SVC_ADMIN_PASSWORD,",
        "                         SVC_BOOTSTRAP_PASSWORD, or a prompt on a terminal)",
        "  --access-key-id <id>   log in as the IAM user holding this key (or",
        "                         SVC_ADMIN_ACCESS_KEY_ID); the user needs the admin permission",
        "  --secret-stdin         read the secret key from stdin (else",
        "                         SVC_ADMIN_SECRET_ACCESS_KEY, or a prompt)",
        "Exit 3 when the server refuses the password or key.",
      ],
      flags: { "password-stdin": "boolean", "access-key-id": "string", "secret-stdin": "boolean" },
      positionals: [0, 0],
      run: login,
    }],
  },
  {
    name: "logout",
    summary: "end the session and remove the session file",
    commands: [{
      name: "",
      usage: "",
      summary: "Ends the session on the server and removes the session file.",
      positionals: [0, 0],
      run: logout,
    }],
  },
  {
    name: "whoami",
    summary: "who the session is, on which server",
    commands: [{
      name: "",
      usage: "",
      summary: "Shows the session's user, server and expiry; exit 3 without a valid session.",
      positionals: [0, 0],
      run: whoami,
    }],
  },
];
