/**
 * `svc admin buckets | backends …`: where buckets live (`/buckets`), creating a bucket on a
 * backend, deleting an empty bucket (`/objects/buckets/:bucket`, as the session's principal), and
 * the configured backends (`/backends`; adding or removing one rewrites the config file, and is
 * refused with the steps to convert while a single backend is configured).
 */
import { flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { fields, humanTime, table } from "./format.ts";
import type { Json } from "./http-client.ts";

const ONE: [number, number] = [1, 1];
const path = (name: string) => encodeURIComponent(name);

/** Prints `answer` as JSON, or `line` for people. */
function say(ctx: AdminContext, answer: unknown, line: string): number {
  if (ctx.json) ctx.printJson(answer);
  else ctx.io.stdout(line);
  return ADMIN_EXIT.ok;
}

/** The entry of `list` named `name`; exit 1 when there is none. */
function named(list: Json[], name: string, what: string): Json {
  const found = list.find((entry) => entry.name === name);
  if (!found) throw new AdminCliError(ADMIN_EXIT.failed, `No ${what} "${name}"`);
  return found;
}

const BUCKETS: AdminGroup = {
  name: "buckets",
  summary: "buckets and their backends",
  commands: [
    {
      name: "list",
      usage: "",
      summary: "Lists the buckets with the backend each lives on.",
      run: async (ctx) => {
        const answer = await (await ctx.session()).json<Json>("GET", "/buckets");
        if (ctx.json) return say(ctx, answer, "");
        const buckets = answer.buckets as Json[];
        if (buckets.length === 0) ctx.io.stdout("(no buckets)");
        else {
          const rows = buckets.map((b) => [
            b.name,
            b.backend,
            b.alias,
            b.routed,
            humanTime(b.created),
            b.error,
          ]);
          for (
            const line of table(["name", "backend", "alias", "routed", "created", "error"], rows)
          ) ctx.io.stdout(line);
        }
        return ADMIN_EXIT.ok;
      },
    },
    {
      name: "show",
      usage: "<bucket>",
      summary: "Shows one bucket: its backend and the job holding it, if any.",
      positionals: ONE,
      run: async (ctx, args) => {
        const http = await ctx.session();
        const name = args.positionals[0];
        const bucket = named(
          (await http.json<Json>("GET", "/buckets")).buckets as Json[],
          name,
          "bucket",
        );
        const jobs = await http.json<Json>("GET", `/jobs/bucket/${path(name)}`);
        if (ctx.json) return say(ctx, { ...bucket, jobs }, "");
        const job = jobs.job as Json | null;
        for (
          const line of fields([
            ["name", bucket.name],
            ["backend", bucket.backend],
            ["alias", bucket.alias],
            ["routed", bucket.routed],
            ["created", humanTime(bucket.created)],
            ["write gate", jobs.write_gate],
            ["active job", job ? `${job.id} ${job.type} ${job.status} (${job.phase})` : null],
            ...(bucket.error ? [["error", bucket.error] as [string, unknown]] : []),
          ])
        ) ctx.io.stdout(line);
        return ADMIN_EXIT.ok;
      },
    },
    {
      name: "create",
      usage: "<bucket> [--backend <name>]",
      summary: "Creates a bucket (on the default backend unless --backend names another).",
      flags: { backend: "string" },
      positionals: ONE,
      run: async (ctx, args) => {
        const body: Json = { name: args.positionals[0] };
        const backend = flagString(args, "backend");
        if (backend) body.backend = backend;
        const answer = await (await ctx.session()).json<Json>("POST", "/buckets", { json: body });
        return say(ctx, answer, `Created bucket "${answer.bucket}" on backend "${answer.backend}"`);
      },
    },
    {
      name: "delete",
      usage: "<bucket>",
      summary: "Deletes an empty bucket.",
      positionals: ONE,
      run: async (ctx, args) => {
        const name = args.positionals[0];
        const answer = await (await ctx.session()).json("DELETE", `/objects/buckets/${path(name)}`);
        return say(ctx, answer, `Deleted bucket "${name}"`);
      },
    },
  ],
};

async function backendSpec(ctx: AdminContext, args: ParsedArgs): Promise<Json> {
  const type = flagString(args, "type");
  const spec: Json = { name: args.positionals[0], type };
  if (type === "filesystem") {
    const dir = flagString(args, "path");
    if (!dir) throw usageError("A filesystem backend needs --path <dir>");
    spec.path = dir;
  } else if (type === "s3") {
    const endpoint = flagString(args, "endpoint");
    if (!endpoint) throw usageError("An s3 backend needs --endpoint <url>");
    spec.endpoint = endpoint;
    const region = flagString(args, "region");
    if (region) spec.region = region;
    if (args.flags["force-path-style"]) spec.force_path_style = true;
    const keyId = flagString(args, "access-key-id");
    if (keyId) {
      const secret = (await ctx.io.readStdin()).split(/\r?\n/)[0];
      if (!secret) throw usageError("--access-key-id needs the secret key on stdin");
      spec.access_key_id = keyId;
      spec.secret_access_key = secret;
    }
  } else throw usageError(`--type must be s3 or filesystem, got "${type ?? ""}"`);
  return spec;
}

const BACKENDS: AdminGroup = {
  name: "backends",
  summary: "storage backends",
  commands: [
    {
      name: "list",
      usage: "",
      summary: "Lists the configured backends.",
      run: async (ctx) => {
        const answer = await (await ctx.session()).json<Json>("GET", "/backends");
        if (ctx.json) return say(ctx, answer, "");
        const rows = (answer.backends as Json[]).map((b) => [
          b.name,
          b.type,
          b.endpoint ?? b.path,
          b.encryption,
          b.default,
          b.available,
        ]);
        const headers = ["name", "type", "location", "encryption", "default", "available"];
        for (const line of table(headers, rows)) ctx.io.stdout(line);
        return ADMIN_EXIT.ok;
      },
    },
    {
      name: "show",
      usage: "<backend>",
      summary: "Shows one backend's settings (secrets are never shown).",
      positionals: ONE,
      run: async (ctx, args) => {
        const answer = await (await ctx.session()).json<Json>("GET", "/backends");
        const backend = named(answer.backends as Json[], args.positionals[0], "backend");
        if (ctx.json) return say(ctx, backend, "");
        for (const line of fields(Object.entries(backend))) ctx.io.stdout(line);
        return ADMIN_EXIT.ok;
      },
    },
    {
      name: "create",
      usage: "<name> --type filesystem --path <dir> | --type s3 --endpoint <url> [--region <r>] " +
        "[--force-path-style] [--access-key-id <id>]",
      summary: "Adds a named backend to the config (an s3 one is probed first).",
      details: [
        "With --access-key-id the secret key is read from stdin (never the command line).",
        "Refused (exit 1, with the steps) while the config has a single storage backend.",
      ],
      flags: {
        type: "string",
        path: "string",
        endpoint: "string",
        region: "string",
        "force-path-style": "boolean",
        "access-key-id": "string",
      },
      positionals: ONE,
      run: async (ctx, args) => {
        const spec = await backendSpec(ctx, args);
        const answer = await (await ctx.session()).json<Json>("POST", "/backends", { json: spec });
        return say(ctx, answer, `Added backend "${spec.name}" (${spec.type})`);
      },
    },
    {
      name: "delete",
      usage: "<backend>",
      summary: "Removes a backend that holds no bucket and is not the default.",
      positionals: ONE,
      run: async (ctx, args) => {
        const name = args.positionals[0];
        const answer = await (await ctx.session()).json("DELETE", `/backends/${path(name)}`);
        return say(ctx, answer, `Removed backend "${name}"`);
      },
    },
  ],
};

export const STORAGE_GROUPS: AdminGroup[] = [BUCKETS, BACKENDS];
