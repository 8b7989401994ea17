/**
 * `svc admin backup export | import` over `/backup` (docs/BACKUP.md). Both stream: the export
 * goes from the response straight into a temporary file (mode 600: a backup holds every secret
 * unless it is password-sealed) renamed into place once complete, and the import sends the file
 * as the request body without reading it into memory. The backup password travels in the
 * `X-Svc-Backup-Password` header, from `SVC_BACKUP_PASSWORD` or `--password-stdin`.
 */
import { flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { fields, humanBytes } from "./format.ts";
import type { Json } from "./http-client.ts";

const PASSWORD_HEADER = "x-svc-backup-password";

async function passwordHeader(
  ctx: AdminContext,
  args: ParsedArgs,
): Promise<Record<string, string>> {
  let password = ctx.io.env.SVC_BACKUP_PASSWORD;
  if (args.flags["password-stdin"] === true) {
    password = (await ctx.io.readStdin()).split(/\r?\n/)[0];
    if (!password) throw usageError("stdin held no backup password");
  }
  return password ? { [PASSWORD_HEADER]: password } : {};
}

/** The file name the server suggests (`attachment; filename="…"`), kept to a plain name. */
export function suggestedName(disposition: string | null): string {
  const match = /filename="?([^";]+)"?/.exec(disposition ?? "");
  const name = match?.[1]?.split(/[\\/]/).pop() ?? "";
  return /^[\w.-]+$/.test(name) ? name : "svc-backup.zip";
}

async function exportBackup(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const http = await ctx.session();
  const headers = await passwordHeader(ctx, args);
  const response = await http.check(
    await http.send("GET", "/backup", { headers, stream: true }),
    "Backup export",
  );
  const target = flagString(args, "output") ??
    suggestedName(response.headers.get("content-disposition"));
  if (target === "-") {
    if (ctx.io.stdoutIsTerminal) {
      await response.body?.cancel();
      throw usageError("Refusing to write a zip to a terminal; redirect stdout or use --output");
    }
    await response.body?.pipeTo(Deno.stdout.writable, { preventClose: true });
    return ADMIN_EXIT.ok;
  }
  const temp = `${target}.partial-${Deno.pid}`;
  try {
    const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o600 });
    // pipeTo closes the file when the body ends (or fails).
    await response.body!.pipeTo(file.writable);
    await Deno.rename(temp, target);
  } catch (err) {
    await Deno.remove(temp).catch(() => {});
    throw new AdminCliError(
      ADMIN_EXIT.failed,
      `Backup export to "${target}" failed: ${(err as Error).message}`,
    );
  }
  const size = (await Deno.stat(target)).size;
  const sealed = PASSWORD_HEADER in headers;
  if (ctx.json) ctx.printJson({ file: target, bytes: size, encrypted: sealed });
  else {
    ctx.io.stdout(`Wrote ${target} (${humanBytes(size)}, mode 600)`);
    if (!sealed) ctx.io.stderr("The backup holds secrets in the clear: keep it safe.");
  }
  return ADMIN_EXIT.ok;
}

async function importBackup(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const path = args.positionals[0];
  const http = await ctx.session();
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (err) {
    throw new AdminCliError(
      ADMIN_EXIT.failed,
      `Cannot read backup file "${path}": ${(err as Error).message}`,
    );
  }
  const type = path.toLowerCase().endsWith(".json") ? "application/json" : "application/zip";
  const answer = await http.json<Json>("POST", "/backup", {
    body: file.readable,
    headers: { "content-type": type, ...(await passwordHeader(ctx, args)) },
    stream: true,
  });
  if (ctx.json) {
    ctx.printJson(answer);
    return ADMIN_EXIT.ok;
  }
  ctx.io.stdout(`Imported ${path}`);
  const counts = Object.entries(answer).filter(([, v]) => typeof v === "number");
  for (const line of fields(counts)) ctx.io.stdout(`  ${line}`);
  for (const warning of (answer.warnings ?? []) as string[]) ctx.io.stderr(`warning: ${warning}`);
  const config = answer.config as Json | undefined;
  if (config?.present) ctx.io.stdout(`note: ${config.note}`);
  return ADMIN_EXIT.ok;
}

export const BACKUP_GROUP: AdminGroup = {
  name: "backup",
  summary: "export and import IAM and config backups",
  commands: [
    {
      name: "export",
      usage: "[--output <file> | --output -] [--password-stdin]",
      summary: "Downloads a backup zip (IAM users, groups, secrets and the config document).",
      details: [
        "  --output <file>    where to write it (default: the server's svc-backup-<time>.zip);",
        "                     - writes to stdout (not a terminal)",
        "  --password-stdin   seal it with the password on stdin (else SVC_BACKUP_PASSWORD,",
        "                     else unsealed)",
      ],
      flags: { output: "string", "password-stdin": "boolean" },
      run: exportBackup,
    },
    {
      name: "import",
      usage: "<file> [--password-stdin]",
      summary: "Restores the IAM part of a backup zip (or a legacy JSON file). The config part " +
        "is never applied; use svc admin config apply for it.",
      details: ["  --password-stdin   the backup's password (else SVC_BACKUP_PASSWORD)"],
      flags: { "password-stdin": "boolean" },
      positionals: [1, 1],
      run: importBackup,
    },
  ],
};
