/**
 * `svc admin users | groups | keys …` over the IAM routes (`/users`, `/groups`). Users and groups
 * are named by id or name (a name is looked up in the list). A user has one key pair: `users
 * create` makes it and `keys rotate` replaces it; the secret is printed once, then only
 * `has_secret` is shown.
 */
import { flagList, flagString, type ParsedArgs } from "./args.ts";
import type { AdminContext, AdminGroup } from "./command.ts";
import { ADMIN_EXIT, AdminCliError, usageError } from "./exit-codes.ts";
import { fields, humanTime, table } from "./format.ts";
import type { AdminHttp, Json } from "./http-client.ts";

type Kind = "users" | "groups";

/** The record whose id or name is `ref`; exit 1 when there is none. */
async function resolve(http: AdminHttp, kind: Kind, ref: string): Promise<Json> {
  const list = (await http.json<Json>("GET", `/${kind}`))[kind] as Json[];
  const found = list.find((r) => r.id === ref) ?? list.find((r) => r.name === ref);
  if (!found) {
    throw new AdminCliError(ADMIN_EXIT.failed, `No ${kind.slice(0, -1)} "${ref}" (by id or name)`);
  }
  return found;
}

const idOf = (record: Json) => encodeURIComponent(String(record.id));

function permissionsFlag(args: ParsedArgs): unknown[] | undefined {
  const raw = flagString(args, "permissions");
  const admin = args.flags.admin === true;
  if (raw !== undefined && admin) throw usageError("--admin and --permissions exclude each other");
  if (admin) return [{ effect: "Allow", actions: ["*"], resources: ["*"] }];
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(raw);
    if (Array.isArray(parsed)) return parsed;
  } catch { /* refused below */ }
  throw usageError(`--permissions must be a JSON list of permissions, got "${raw}"`);
}

/** Prints the one-time secret of create/rotate with a warning to keep it. */
function printKeys(ctx: AdminContext, user: Json, verb: string): number {
  if (ctx.json) {
    ctx.printJson(user);
    return ADMIN_EXIT.ok;
  }
  ctx.io.stdout(`${verb} user "${user.name}" (id ${user.id})`);
  ctx.io.stdout(`access key id:     ${user.access_key_id}`);
  ctx.io.stdout(`secret access key: ${user.secret_access_key}`);
  ctx.io.stderr("The secret is shown only now: store it.");
  return ADMIN_EXIT.ok;
}

function userRows(users: Json[]): string[] {
  return table(
    ["name", "id", "access key", "enabled", "groups", "permissions"],
    users.map((u) => [
      u.name,
      u.id,
      u.access_key_id,
      u.enabled,
      u.groups,
      Array.isArray(u.permissions) ? u.permissions.length : "-",
    ]),
  );
}

const listed = (kind: Kind, rows: (records: Json[]) => string[]) =>
async (
  ctx: AdminContext,
): Promise<number> => {
  const answer = await (await ctx.session()).json<Json>("GET", `/${kind}`);
  if (ctx.json) ctx.printJson(answer);
  else {
    const records = answer[kind] as Json[];
    if (records.length === 0) ctx.io.stdout(`(no ${kind})`);
    else for (const line of rows(records)) ctx.io.stdout(line);
  }
  return ADMIN_EXIT.ok;
};

const shown = (kind: Kind) => async (ctx: AdminContext, args: ParsedArgs): Promise<number> => {
  const record = await resolve(await ctx.session(), kind, args.positionals[0]);
  if (ctx.json) ctx.printJson(record);
  else {
    const entries = Object.entries(record).map(([key, value]): [string, unknown] =>
      key.endsWith("_at") ? [key, humanTime(value)] : [key, value]
    );
    for (const line of fields(entries)) ctx.io.stdout(line);
  }
  return ADMIN_EXIT.ok;
};

/** Runs a change and prints its answer (`--json`) or one line. */
const changed = (
  kind: Kind,
  change: (http: AdminHttp, record: Json, args: ParsedArgs) => Promise<Json>,
  says: (record: Json, answer: Json) => string,
) =>
async (ctx: AdminContext, args: ParsedArgs): Promise<number> => {
  const http = await ctx.session();
  const record = await resolve(http, kind, args.positionals[0]);
  const answer = await change(http, record, args);
  if (ctx.json) ctx.printJson(answer);
  else ctx.io.stdout(says(record, answer));
  return ADMIN_EXIT.ok;
};

const setEnabled = (enabled: boolean) =>
  changed(
    "users",
    (http, user) => http.json("PUT", `/users/${idOf(user)}`, { json: { enabled } }),
    (user) => `User "${user.name}" ${enabled ? "enabled" : "disabled"}`,
  );

const ONE: [number, number] = [1, 1];

const USERS: AdminGroup = {
  name: "users",
  summary: "IAM users",
  commands: [
    { name: "list", usage: "", summary: "Lists the IAM users.", run: listed("users", userRows) },
    {
      name: "show",
      usage: "<user>",
      summary: "Shows one user (by id or name).",
      positionals: ONE,
      run: shown("users"),
    },
    {
      name: "create",
      usage: "<name> [--group <g>]... [--admin | --permissions <json>] [--disabled]",
      summary: "Creates a user with a new key pair; the secret is printed once.",
      details: [
        "  --group <g>            a group to join (repeatable)",
        "  --admin                grant every action on everything (admin console included)",
        '  --permissions <json>   a JSON list, e.g. \'[{"effect":"Allow","actions":["read"],' +
        '"resources":["photos/*"]}]\'',
        "  --access-key-id <id>   choose the access key id (else generated)",
        "  --disabled             create it disabled",
      ],
      flags: {
        group: "list",
        admin: "boolean",
        permissions: "string",
        "access-key-id": "string",
        disabled: "boolean",
      },
      positionals: ONE,
      run: async (ctx, args) => {
        const body: Json = { name: args.positionals[0] };
        const groups = flagList(args, "group");
        if (groups.length > 0) body.groups = groups;
        const permissions = permissionsFlag(args);
        if (permissions) body.permissions = permissions;
        const keyId = flagString(args, "access-key-id");
        if (keyId) body.access_key_id = keyId;
        if (args.flags.disabled) body.enabled = false;
        const user = await (await ctx.session()).json<Json>("POST", "/users", { json: body });
        return printKeys(ctx, user, "Created");
      },
    },
    {
      name: "disable",
      usage: "<user>",
      summary: "Disables a user (its keys stop working, its sessions end).",
      positionals: ONE,
      run: setEnabled(false),
    },
    {
      name: "enable",
      usage: "<user>",
      summary: "Enables a disabled user.",
      positionals: ONE,
      run: setEnabled(true),
    },
    {
      name: "delete",
      usage: "<user>",
      summary: "Deletes a user and its key pair.",
      positionals: ONE,
      run: changed(
        "users",
        (http, user) => http.json("DELETE", `/users/${idOf(user)}`),
        (user) => `User "${user.name}" deleted`,
      ),
    },
  ],
};

const GROUPS: AdminGroup = {
  name: "groups",
  summary: "IAM groups",
  commands: [
    {
      name: "list",
      usage: "",
      summary: "Lists the IAM groups.",
      run: listed("groups", (groups) =>
        table(
          ["name", "id", "members", "permissions", "description"],
          groups.map((g) => [
            g.name,
            g.id,
            g.members,
            Array.isArray(g.permissions) ? g.permissions.length : "-",
            g.description,
          ]),
        )),
    },
    {
      name: "show",
      usage: "<group>",
      summary: "Shows one group (by id or name).",
      positionals: ONE,
      run: shown("groups"),
    },
    {
      name: "create",
      usage: "<name> [--description <text>] [--admin | --permissions <json>]",
      summary: "Creates a group.",
      flags: { description: "string", admin: "boolean", permissions: "string" },
      positionals: ONE,
      run: async (ctx, args) => {
        const body: Json = { name: args.positionals[0] };
        const description = flagString(args, "description");
        if (description !== undefined) body.description = description;
        const permissions = permissionsFlag(args);
        if (permissions) body.permissions = permissions;
        const group = await (await ctx.session()).json<Json>("POST", "/groups", { json: body });
        if (ctx.json) ctx.printJson(group);
        else ctx.io.stdout(`Created group "${group.name}" (id ${group.id})`);
        return ADMIN_EXIT.ok;
      },
    },
    {
      name: "delete",
      usage: "<group>",
      summary: "Deletes a group (its members stay, without it).",
      positionals: ONE,
      run: changed(
        "groups",
        (http, group) => http.json("DELETE", `/groups/${idOf(group)}`),
        (group) => `Group "${group.name}" deleted`,
      ),
    },
    {
      name: "add-member",
      usage: "<group> <user>",
      summary: "Adds a user to a group.",
      positionals: [2, 2],
      run: changed("groups", async (http, group, args) => {
        const user = await resolve(http, "users", args.positionals[1]);
        return http.json("POST", `/groups/${idOf(group)}/members`, { json: { user_id: user.id } });
      }, (group, answer) => `Group "${group.name}" members: ${(answer.members as string[])}`),
    },
    {
      name: "remove-member",
      usage: "<group> <user>",
      summary: "Removes a user from a group.",
      positionals: [2, 2],
      run: changed("groups", async (http, group, args) => {
        const user = await resolve(http, "users", args.positionals[1]);
        return http.json("DELETE", `/groups/${idOf(group)}/members/${idOf(user)}`);
      }, (group, answer) => `Group "${group.name}" members: ${(answer.members as string[])}`),
    },
  ],
};

const KEYS: AdminGroup = {
  name: "keys",
  summary: "access keys (one pair per user)",
  commands: [
    {
      name: "list",
      usage: "",
      summary: "Lists every user's access key id (secrets are never shown again).",
      run: listed("users", (users) =>
        table(
          ["access key", "user", "enabled", "has secret", "updated"],
          users.map((
            u,
          ) => [u.access_key_id, u.name, u.enabled, u.has_secret, humanTime(u.updated_at)]),
        )),
    },
    {
      name: "rotate",
      usage: "<user>",
      summary: "Replaces a user's key pair; the old one stops working and its sessions end. The " +
        "new secret is printed once.",
      positionals: ONE,
      run: async (ctx, args) => {
        const http = await ctx.session();
        const user = await resolve(http, "users", args.positionals[0]);
        const rotated = await http.json<Json>("POST", `/users/${idOf(user)}/rotate-keys`);
        return printKeys(ctx, rotated, "Rotated the keys of");
      },
    },
  ],
};

export const IAM_GROUPS: AdminGroup[] = [USERS, GROUPS, KEYS];
