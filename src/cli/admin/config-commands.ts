/**
 * `svc admin config export | show | validate | apply` over `/config`: the running config as YAML
 * (secrets removed) or JSON, and a YAML file checked or applied live by the server, which
 * persists it to its own config file. The file is sent as written (`${env:…}` placeholders are
 * expanded by the server when it loads its file); secrets the file leaves out are kept.
 */
import { flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError } from "./exit-codes.ts";
import type { Json } from "./http-client.ts";

async function exportConfig(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const http = await ctx.session();
  const section = flagString(args, "section");
  const response = await http.check(
    await http.send("GET", "/config/export", { query: { section } }),
    "Config export",
  );
  const yaml = await response.text();
  const output = flagString(args, "output");
  if (output) {
    // The export has secrets removed, but it is still the instance's layout: owner-only.
    await Deno.writeTextFile(output, yaml, { mode: 0o600 });
    ctx.io.stdout(`Wrote ${output}`);
  } else ctx.io.write(yaml.endsWith("\n") ? yaml : `${yaml}\n`);
  return ADMIN_EXIT.ok;
}

async function showConfig(ctx: AdminContext, args: ParsedArgs): Promise<number> {
  const section = flagString(args, "section");
  const path = section ? `/config/section/${encodeURIComponent(section)}` : "/config";
  ctx.printJson(await (await ctx.session()).json("GET", path));
  return ADMIN_EXIT.ok;
}

const list = (value: unknown): string[] => Array.isArray(value) ? value.map(String) : [];

const sendFile =
  (route: "validate" | "apply") => async (ctx: AdminContext, args: ParsedArgs): Promise<number> => {
    const file = args.positionals[0];
    let yaml: string;
    try {
      yaml = await Deno.readTextFile(file);
    } catch (err) {
      throw new AdminCliError(
        ADMIN_EXIT.failed,
        `Cannot read config file "${file}": ${(err as Error).message}`,
      );
    }
    const answer = await (await ctx.session()).json<Json>("POST", `/config/${route}`, {
      json: { yaml },
    });
    if (ctx.json) {
      ctx.printJson(answer);
      return ADMIN_EXIT.ok;
    }
    for (const warning of list(answer.warnings)) ctx.io.stderr(`warning: ${warning}`);
    const applied = list(answer.applied);
    const restart = list(answer.requires_restart);
    if (route === "validate") {
      ctx.io.stdout(
        `${file}: valid${applied.length ? ` (would change ${applied.join(", ")})` : ""}`,
      );
    } else ctx.io.stdout(applied.length ? `Applied: ${applied.join(", ")}` : "Applied: no changes");
    if (restart.length) ctx.io.stdout(`Needs a restart: ${restart.join(", ")}`);
    if (answer.persisted === true) ctx.io.stdout(`Persisted to ${answer.persisted_path}`);
    return ADMIN_EXIT.ok;
  };

export const CONFIG_GROUP: AdminGroup = {
  name: "config",
  summary: "the running configuration",
  commands: [
    {
      name: "export",
      usage: "[--section <name>] [--output <file>]",
      summary: "Prints the running config as YAML (secrets removed).",
      flags: { section: "string", output: "string" },
      run: exportConfig,
    },
    {
      name: "show",
      usage: "[--section <name>]",
      summary: "Prints the running config as JSON, every default filled in (secrets removed).",
      flags: { section: "string" },
      run: showConfig,
    },
    {
      name: "validate",
      usage: "<file>",
      summary: "Asks the server whether a YAML config file is valid; changes nothing. Exit 1 " +
        "with the server's message when it is not.",
      positionals: [1, 1],
      run: sendFile("validate"),
    },
    {
      name: "apply",
      usage: "<file>",
      summary: "Applies a YAML config file live; the server persists it to its config file.",
      positionals: [1, 1],
      run: sendFile("apply"),
    },
  ],
};
