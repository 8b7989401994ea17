/**
 * `svc admin …`: the command table and its dispatcher. Finds the group and command, parses the
 * flags (the command's and the global ones), answers `--help` at any level with exit 0, builds
 * the context (server, session file, clients) and maps every failure to one stderr line and its
 * exit code (exit-codes.ts).
 */
import { GLOBAL_FLAGS, parseArgs } from "./args.ts";
import { type AdminIo, processIo } from "./admin-io.ts";
import {
  type AdminCommand,
  type AdminContext,
  type AdminGroup,
  commandHelp,
  commandLine,
  GLOBAL_HELP,
} from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { AdminHttp } from "./http-client.ts";
import { readSession, sessionPath } from "./session-file.ts";
import { SESSION_GROUPS } from "./session-commands.ts";
import { IAM_GROUPS } from "./iam-commands.ts";
import { STORAGE_GROUPS } from "./storage-commands.ts";
import { JOBS_GROUP } from "./jobs-commands.ts";
import { BACKUP_GROUP } from "./backup-commands.ts";
import { CONFIG_GROUP } from "./config-commands.ts";
import { DIAGNOSTICS_GROUP } from "./diagnostics-commands.ts";

/** Every command group, in the order help lists them. */
export const ADMIN_GROUPS: readonly AdminGroup[] = [
  ...SESSION_GROUPS,
  ...IAM_GROUPS,
  ...STORAGE_GROUPS,
  JOBS_GROUP,
  BACKUP_GROUP,
  CONFIG_GROUP,
  DIAGNOSTICS_GROUP,
];

export const DEFAULT_SERVER = "http://127.0.0.1:9000";

export function adminUsage(): string {
  const lines = ["Usage: svc admin <command> [options]", "", "Commands:"];
  for (const group of ADMIN_GROUPS) {
    for (const command of group.commands) {
      const line = `  ${commandLine(group, command).slice("svc admin ".length)}${
        command.usage ? ` ${command.usage}` : ""
      }`;
      lines.push(line);
    }
  }
  lines.push("", "`svc admin <command> --help` explains one command.", "", GLOBAL_HELP);
  return lines.join("\n");
}

function groupUsage(group: AdminGroup): string {
  return [
    `Usage: svc admin ${group.name} <command> [options]   (${group.summary})`,
    "",
    ...group.commands.map((c) => `  ${c.name.padEnd(14)} ${c.summary.split(". ")[0]}`),
    "",
    `\`svc admin ${group.name} <command> --help\` explains one command.`,
  ].join("\n");
}

function serverUrl(raw: string, from: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`${from} must be a URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usageError(`${from} must be an http(s):// URL, got "${raw}"`);
  }
  return url;
}

async function contextFor(
  io: AdminIo,
  flags: Record<string, unknown>,
): Promise<AdminContext> {
  const path = sessionPath(io.env, flags["session-file"] as string | undefined);
  const given = flags.server as string | undefined;
  const fromEnv = io.env.SVC_ADMIN_URL || undefined;
  // The session's own server comes after the explicit choices and before the default.
  const stored = (given ?? fromEnv) ? null : await readSession(path, io.stderr).catch(() => null);
  const server = serverUrl(
    given ?? fromEnv ?? stored?.server ?? DEFAULT_SERVER,
    given ? "--server" : fromEnv ? "SVC_ADMIN_URL" : "the server",
  );
  return {
    io,
    json: flags.json === true,
    server,
    sessionPath: path,
    anonymous: () => new AdminHttp(server),
    printJson: (value) => io.stdout(JSON.stringify(value, null, 2)),
    session: async () => {
      const session = await readSession(path, io.stderr);
      if (session === null) {
        throw new AdminCliError(ADMIN_EXIT.auth, "Not logged in: run svc admin login");
      }
      if (new URL(session.server).href !== server.href) {
        throw new AdminCliError(
          ADMIN_EXIT.auth,
          `The session is for ${session.server}, not ${server.href}: run svc admin login`,
        );
      }
      if (session.expires_at && Date.parse(session.expires_at) <= Date.now()) {
        throw new AdminCliError(
          ADMIN_EXIT.auth,
          `The session expired at ${session.expires_at}: run svc admin login`,
        );
      }
      return new AdminHttp(server, session.cookie);
    },
  };
}

function find(args: string[]): { group?: AdminGroup; command?: AdminCommand; rest: string[] } {
  const group = ADMIN_GROUPS.find((g) => g.name === args[0]);
  if (!group) return { rest: args };
  const single = group.commands.find((c) => c.name === "");
  if (single) return { group, command: single, rest: args.slice(1) };
  const command = group.commands.find((c) => c.name === args[1]);
  return { group, command, rest: args.slice(command ? 2 : 1) };
}

const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h" || arg === "help";

/** Dispatches `svc admin <args>`; returns the exit code. */
export async function runAdminCommand(args: string[], io: AdminIo = processIo()): Promise<number> {
  try {
    if (args.length === 0 || isHelp(args[0])) {
      if (args.length === 0) {
        io.stderr(adminUsage());
        return ADMIN_EXIT.usage;
      }
      io.stdout(adminUsage());
      return ADMIN_EXIT.ok;
    }
    const { group, command, rest } = find(args);
    if (!group) throw usageError(`Unknown admin command "${args[0]}" (see svc admin --help)`);
    if (!command) {
      if (isHelp(args[1])) {
        io.stdout(groupUsage(group));
        return ADMIN_EXIT.ok;
      }
      io.stderr(groupUsage(group));
      throw usageError(
        args[1] === undefined
          ? `svc admin ${group.name} needs a command`
          : `Unknown command "${args[1]}" for svc admin ${group.name}`,
      );
    }
    const parsed = parseArgs(rest, { ...GLOBAL_FLAGS, ...command.flags });
    if (parsed.help) {
      io.stdout(commandHelp(group, command));
      return ADMIN_EXIT.ok;
    }
    const [min, max] = command.positionals ?? [0, 0];
    const count = parsed.positionals.length;
    if (count < min || count > max) {
      throw usageError(
        `${commandLine(group, command)} takes ${
          min === max ? min : `${min} to ${max}`
        } argument(s), got ${count} (usage: ${commandLine(group, command)} ${command.usage})`,
      );
    }
    return await command.run(await contextFor(io, parsed.flags), parsed);
  } catch (err) {
    if (!(err instanceof AdminCliError)) {
      io.stderr(`svc: ${(err as Error)?.message ?? String(err)}`);
      return ADMIN_EXIT.failed;
    }
    io.stderr(`svc: ${err.message}`);
    return err.exitCode;
  }
}
