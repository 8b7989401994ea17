/**
 * The shape of an `svc admin` command and what it runs with. Each command group lives in its own
 * file and exports an AdminGroup; admin-command.ts collects them into the table that dispatches,
 * prints help, and that the tests iterate over.
 */
import type { FlagSpec, ParsedArgs } from "./args.ts";
import type { AdminIo } from "./admin-io.ts";
import type { AdminHttp } from "./http-client.ts";

export interface AdminContext {
  io: AdminIo;
  /** `--json`: print the API's JSON instead of tables. */
  json: boolean;
  /** The server from `--server`, `SVC_ADMIN_URL`, the session, or the default. */
  server: URL;
  sessionPath: string;
  /** A client holding the stored session; exit 3 when there is none for this server. */
  session(): Promise<AdminHttp>;
  /** A client without a session (login). */
  anonymous(): AdminHttp;
  /** Prints a value as indented JSON (the `--json` output). */
  printJson(value: unknown): void;
}

export interface AdminCommand {
  /** The subcommand; "" for a group that is itself the command (`svc admin login`). */
  name: string;
  /** Positionals and flags after the command, for the usage line. */
  usage: string;
  summary: string;
  /** More help lines (flags, notes). */
  details?: string[];
  flags?: FlagSpec;
  /** How many positionals it takes: [min, max]. */
  positionals?: [number, number];
  run(ctx: AdminContext, args: ParsedArgs): Promise<number>;
}

export interface AdminGroup {
  name: string;
  summary: string;
  commands: AdminCommand[];
}

/** `svc admin <group> <command>` as typed. */
export function commandLine(group: AdminGroup, command: AdminCommand): string {
  return ["svc admin", group.name, command.name].filter((part) => part !== "").join(" ");
}

/** The help of one command: usage, summary, details and the global options. */
export function commandHelp(group: AdminGroup, command: AdminCommand): string {
  return [
    `Usage: ${commandLine(group, command)}${command.usage ? ` ${command.usage}` : ""}`,
    "",
    ...wrap(command.summary, 92),
    ...(command.details?.length ? ["", ...command.details] : []),
    "",
    GLOBAL_HELP,
  ].join("\n");
}

/** `text` broken at spaces into lines of at most `width` characters. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

export const GLOBAL_HELP = `Global options:
  --server <url>         the svc server (else SVC_ADMIN_URL, the session's server,
                         http://127.0.0.1:9000)
  --session-file <path>  the session file (else SVC_ADMIN_SESSION_FILE,
                         $XDG_CONFIG_HOME/svc/admin-session.json)
  --json                 print the API's JSON instead of a table
  -h, --help             this help
Exit codes: 0 ok, 1 the server refused or the operation failed, 2 usage error,
3 not logged in / session expired / login refused, 4 server unreachable.`;
