/**
 * The IAM part of the admin API (SPEC "Admin API → IAM"): users, groups, memberships, the index
 * version and the canned policies. Mounted under `/_/api/admin`; `/policies` is public (it is in
 * the guard's DEFAULT_PUBLIC_ADMIN_PATHS), the rest needs a session.
 *
 * - A secret is in the response of create, rotate-keys and user clone only (shown once); lists
 *   and updates answer `has_secret` instead.
 * - Every mutation is one store transaction, then awaits `onChange` (the index rebuild), so the
 *   next S3 request already sees the change; then it is audited (`iam_user_created`, …, with who
 *   and from where; never a secret).
 * - With `access.iam_mode: declarative` the YAML is authoritative: every mutation answers 403
 *   `iam_declarative` before reading its body; reads stay open.
 */
import { type Context, Hono } from "hono";
import type { IamStore } from "../../db/mod.ts";
import { assertNotBootstrapKey, IamError, POLICY_TEMPLATES } from "../../iam/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import {
  addMemberBody,
  cloneBody,
  createGroupBody,
  createUserBody,
  updateGroupBody,
  updateUserBody,
} from "./iam-bodies.ts";

export interface IamRoutesDeps {
  store: IamStore;
  config: Pick<ConfigPort, "current">;
  audit: AuditFn;
  /** Rebuilds the IAM index after a change; awaited before the response. */
  onChange: () => Promise<unknown>;
  /** The version of the index in effect (IamIndexHolder.version). */
  indexVersion: () => number;
}

/** Runs a store call, mapping its IamError to the admin error shape. */
export async function store<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof IamError) {
      const code = err.kind === "invalid"
        ? "bad_request"
        : err.kind === "not_found"
        ? "not_found"
        : "conflict";
      throw new AdminError(code, err.message);
    }
    throw err;
  }
}

/** Declarative mode: IAM mutations are refused before anything is read or changed. */
export function declarativeIamGate(config: Pick<ConfigPort, "current">) {
  return async (c: Context<AdminEnv>, next: () => Promise<void>) => {
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      if (config.current().access.iam_mode === "declarative") {
        throw new AdminError(
          "iam_declarative",
          "IAM is managed by the config file (access.iam_mode: declarative); change " +
            "access.iam_users / access.iam_groups / access.auth_providers / " +
            "access.group_mapping_rules there, or switch to gui mode",
        );
      }
    }
    await next();
  };
}

/** The answer of an IAM change: rebuilds the index, audits who did it, answers `body`. */
export function changeAnswer(
  deps: { onChange: () => Promise<unknown>; audit: AuditFn },
) {
  return async (
    c: Context<AdminEnv>,
    event: string,
    fields: Record<string, unknown>,
    body: unknown,
    status: 200 | 201 = 200,
  ): Promise<Response> => {
    await deps.onChange();
    deps.audit(event, { ...actorFields(c.var), ...fields }, "info");
    return c.json(body as Record<string, unknown>, status);
  };
}

export function iamRoutes(deps: IamRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  // Registered on this file's paths only (a `*` middleware would run for every admin route once
  // mounted).
  const declarativeGate = declarativeIamGate(deps.config);
  for (const path of ["/users", "/users/*", "/groups", "/groups/*"]) app.use(path, declarativeGate);

  const changed = changeAnswer(deps);

  // --- users ----------------------------------------------------------------------------------

  app.get("/users", async (c) => c.json({ users: await store(() => deps.store.listUsers()) }));

  app.post("/users", async (c) => {
    const body = await validBody(c, createUserBody);
    const user = await store(() => {
      // The rule every user-writing path shares (iam/model.ts); only POST /migrate skips it.
      if (typeof body.access_key_id === "string") {
        assertNotBootstrapKey(
          { name: String(body.name), access_key_id: body.access_key_id },
          deps.config.current().access.access_key_id,
        );
      }
      return deps.store.createUser({ ...body, name: body.name as string } as never);
    });
    return changed(
      c,
      "iam_user_created",
      {
        target_user: user.name,
        access_key_id: user.access_key_id,
      },
      user,
      201,
    );
  });

  app.put("/users/:id", async (c) => {
    const body = await validBody(c, updateUserBody);
    const user = await store(() => deps.store.updateUser(c.req.param("id"), body as never));
    return changed(c, "iam_user_updated", {
      target_user: user.name,
      fields: Object.keys(body),
    }, user);
  });

  app.delete("/users/:id", async (c) => {
    const user = await store(() => deps.store.deleteUser(c.req.param("id")));
    return changed(c, "iam_user_deleted", {
      target_user: user.name,
      access_key_id: user.access_key_id,
    }, { deleted: true, id: user.id, name: user.name });
  });

  app.post("/users/:id/rotate-keys", async (c) => {
    const user = await store(() => deps.store.rotateKeys(c.req.param("id")));
    return changed(c, "iam_user_keys_rotated", {
      target_user: user.name,
      access_key_id: user.access_key_id,
    }, user);
  });

  app.post("/users/:id/clone", async (c) => {
    const body = await validBody(c, cloneBody);
    const user = await store(() => deps.store.cloneUser(c.req.param("id"), body.name));
    return changed(
      c,
      "iam_user_cloned",
      {
        source_user_id: c.req.param("id"),
        target_user: user.name,
        access_key_id: user.access_key_id,
      },
      user,
      201,
    );
  });

  // --- groups ---------------------------------------------------------------------------------

  app.get("/groups", async (c) => c.json({ groups: await store(() => deps.store.listGroups()) }));

  app.post("/groups", async (c) => {
    const body = await validBody(c, createGroupBody);
    const group = await store(() => deps.store.createGroup(body as never));
    return changed(c, "iam_group_created", { group: group.name }, group, 201);
  });

  app.put("/groups/:id", async (c) => {
    const body = await validBody(c, updateGroupBody);
    const group = await store(() => deps.store.updateGroup(c.req.param("id"), body as never));
    return changed(c, "iam_group_updated", { group: group.name, fields: Object.keys(body) }, group);
  });

  app.delete("/groups/:id", async (c) => {
    const group = await store(() => deps.store.deleteGroup(c.req.param("id")));
    return changed(c, "iam_group_deleted", { group: group.name, members: group.members.length }, {
      deleted: true,
      id: group.id,
      name: group.name,
    });
  });

  app.post("/groups/:id/clone", async (c) => {
    const body = await validBody(c, cloneBody);
    const group = await store(() => deps.store.cloneGroup(c.req.param("id"), body.name));
    return changed(
      c,
      "iam_group_cloned",
      {
        source_group_id: c.req.param("id"),
        group: group.name,
      },
      group,
      201,
    );
  });

  app.post("/groups/:id/members", async (c) => {
    const userId = (await validBody(c, addMemberBody)).user_id;
    const group = await store(() => deps.store.addMember(c.req.param("id"), userId));
    return changed(c, "iam_group_member_added", { group: group.name, user_id: userId }, group);
  });

  app.delete("/groups/:id/members/:user_id", async (c) => {
    const userId = c.req.param("user_id");
    const group = await store(() => deps.store.removeMember(c.req.param("id"), userId));
    return changed(c, "iam_group_member_removed", { group: group.name, user_id: userId }, group);
  });

  // --- index and templates --------------------------------------------------------------------

  app.get("/iam/version", async (c) =>
    c.json({
      version: deps.indexVersion(),
      store_version: await deps.store.version(),
    }));

  app.get("/policies", (c) => c.json({ policies: POLICY_TEMPLATES }));

  return app;
}
