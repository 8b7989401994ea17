/**
 * The browse panel's helpers, under `/_/api/admin` (open to browse-only sessions too):
 *   GET  /objects/list?bucket=&prefix=&delimiter=&continuation_token=&max_keys=
 *        buckets (no `bucket`), or one page of keys and common prefixes
 *   POST /objects/copy    {items: [{source_bucket, source_key, destination_bucket, destination_key}]}
 *   POST /objects/move    same body: copy, then delete the source only when its copy succeeded
 *   POST /objects/delete  {bucket, keys: [..]}
 *   GET  /objects/zip?bucket=&key=..&key=..   or   ?bucket=&prefix=   streams a ZIP
 *
 * Every object operation is an in-process S3 request acting as the session's user (s3-internal.ts),
 * so IAM decides exactly as it would for that user's SDK. Batches hold at most 1,000 items and
 * answer per item (`{ok}` or `{error, message}`); a batch that did anything is audited.
 */
import { Hono } from "hono";
import type * as v from "valibot";
import type { IamIndex, Principal } from "../../iam/mod.ts";
import { childrenNamed, childText, parseXml } from "../../s3/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv, type AdminPrincipal } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { deleteObjectsBody, transferBody } from "./storage-bodies.ts";
import { ActingClient, checkTarget, type InternalS3, s3Failure, s3Path } from "./s3-internal.ts";
import { zipObjects } from "./zip-objects.ts";

export interface ObjectRoutesDeps {
  s3: InternalS3;
  index: () => IamIndex;
  config: Pick<ConfigPort, "current">;
  audit: AuditFn;
}

interface ItemResult {
  ok: boolean;
  error?: string;
  message?: string;
}

/** The S3 principal a session acts as. */
export function principalOf(
  deps: Pick<ObjectRoutesDeps, "index" | "config">,
  session: AdminPrincipal,
): Principal | null {
  const access = deps.config.current().access;
  if (session.user === "$bootstrap") {
    return { name: "$bootstrap", accessKeyId: access.access_key_id ?? "" };
  }
  if (session.user === "$anonymous") {
    if (access.authentication?.trim().toLowerCase() !== "none") {
      throw new AdminError("unauthorized", "Open browsing ended: svc now requires credentials");
    }
    return null;
  }
  const user = deps.index().principalByName(session.user);
  if (!user) throw new AdminError("unauthorized", `User "${session.user}" no longer exists`);
  return { name: user.name, accessKeyId: user.accessKeyId };
}

/**
 * Refuses a bucket the session's user may not see, with the answer the browse routes give for it
 * (a HeadBucket as that user: 403 forbidden, 404 not_found): for admin routes that show a bucket's
 * state to browse sessions (`/jobs/bucket/:bucket`).
 */
export function sessionBucketCheck(deps: Pick<ObjectRoutesDeps, "s3" | "index" | "config">) {
  return async (c: { var: AdminEnv["Variables"] }, bucket: string): Promise<void> => {
    const s3 = new ActingClient(deps.s3, principalOf(deps, c.var.principal), c.var.clientIp);
    const response = await s3.send("HEAD", s3Path(bucket));
    if (!response.ok) throw await s3Failure(response);
    await response.body?.cancel();
  };
}

function stringField(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "") {
    throw new AdminError("bad_request", `Field "${name}" must be a non-empty string`);
  }
  return value;
}

/** The items of a copy or move, every target checked before the first call. */
function checkedItems(items: v.InferOutput<typeof transferBody>["items"]) {
  // Every item is checked before the first call, so a refused one leaves nothing half done.
  items.forEach((item, i) => {
    checkTarget(item.source_bucket, item.source_key, `items[${i}].source_key`);
    checkTarget(item.destination_bucket, item.destination_key, `items[${i}].destination_key`);
  });
  return items;
}

async function outcome(response: Response): Promise<ItemResult> {
  if (response.ok) {
    await response.body?.cancel();
    return { ok: true };
  }
  const failure = await s3Failure(response);
  return { ok: false, error: String(failure.details.s3_code), message: failure.message };
}

export function objectRoutes(deps: ObjectRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const client = (c: { var: AdminEnv["Variables"] }) =>
    new ActingClient(deps.s3, principalOf(deps, c.var.principal), c.var.clientIp);

  app.get("/objects/list", async (c) => {
    const s3 = client(c);
    const bucket = c.req.query("bucket");
    if (!bucket) {
      const response = await s3.send("GET", "/");
      if (!response.ok) throw await s3Failure(response);
      const doc = parseXml(await response.text());
      const buckets = childrenNamed(doc, "Buckets").flatMap((b) => childrenNamed(b, "Bucket"));
      return c.json({
        buckets: buckets.map((b) => ({
          name: childText(b, "Name"),
          created: childText(b, "CreationDate"),
        })),
      });
    }
    const query = new URLSearchParams({ "list-type": "2" });
    for (
      const [param, name] of [
        ["prefix", "prefix"],
        ["delimiter", "delimiter"],
        ["continuation_token", "continuation-token"],
        ["max_keys", "max-keys"],
      ]
    ) {
      const value = c.req.query(param);
      if (value !== undefined && value !== "") query.set(name, value);
    }
    const response = await s3.send("GET", s3Path(bucket), { query: query.toString() });
    if (!response.ok) throw await s3Failure(response);
    const doc = parseXml(await response.text());
    return c.json({
      bucket,
      prefix: c.req.query("prefix") ?? "",
      objects: childrenNamed(doc, "Contents").map((o) => ({
        key: childText(o, "Key"),
        size: Number(childText(o, "Size")),
        etag: childText(o, "ETag")?.replaceAll('"', ""),
        last_modified: childText(o, "LastModified"),
      })),
      prefixes: childrenNamed(doc, "CommonPrefixes").map((p) => childText(p, "Prefix")),
      truncated: childText(doc, "IsTruncated") === "true",
      next_continuation_token: childText(doc, "NextContinuationToken") ?? null,
    });
  });

  async function copyAll(
    s3: ActingClient,
    items: ReturnType<typeof checkedItems>,
    move: boolean,
  ): Promise<Array<ReturnType<typeof checkedItems>[number] & ItemResult>> {
    const results = [];
    for (const item of items) {
      const copied = await outcome(
        await s3.send("PUT", s3Path(item.destination_bucket, item.destination_key), {
          headers: { "x-amz-copy-source": s3Path(item.source_bucket, item.source_key) },
        }),
      );
      // A move deletes its source only once the copy is known good.
      const result = move && copied.ok
        ? await outcome(await s3.send("DELETE", s3Path(item.source_bucket, item.source_key)))
        : copied;
      results.push({ ...item, ...result });
    }
    return results;
  }

  for (const action of ["copy", "move"] as const) {
    app.post(`/objects/${action}`, async (c) => {
      const items = checkedItems((await validBody(c, transferBody)).items);
      const results = await copyAll(client(c), items, action === "move");
      const done = results.filter((r) => r.ok).length;
      if (done > 0) {
        deps.audit(`objects_${action === "copy" ? "copied" : "moved"}`, {
          ...actorFields(c.var),
          count: done,
          failed: results.length - done,
        });
      }
      return c.json({ results, succeeded: done, failed: results.length - done });
    });
  }

  app.post("/objects/delete", async (c) => {
    const { bucket, keys: names } = await validBody(c, deleteObjectsBody);
    names.forEach((name, i) => checkTarget(bucket, name, `keys[${i}]`));
    const s3 = client(c);
    const results = [];
    for (const name of names) {
      results.push({ key: name, ...await outcome(await s3.send("DELETE", s3Path(bucket, name))) });
    }
    const done = results.filter((r) => r.ok).length;
    if (done > 0) {
      deps.audit("objects_deleted", { ...actorFields(c.var), bucket, count: done });
    }
    return c.json({ results, succeeded: done, failed: results.length - done });
  });

  app.get("/objects/zip", async (c) => {
    const bucket = stringField(c.req.query("bucket"), "bucket");
    const keys = c.req.queries("key") ?? [];
    const prefix = c.req.query("prefix");
    if ((keys.length === 0) === (prefix === undefined)) {
      throw new AdminError("bad_request", `Give either "key" (repeatable) or "prefix"`);
    }
    for (const key of keys) checkTarget(bucket, key);
    const s3 = client(c);
    const { stream, entries } = await zipObjects(
      s3,
      bucket,
      keys.length > 0 ? { keys } : {
        prefix: prefix!,
      },
    );
    deps.audit("objects_zipped", { ...actorFields(c.var), bucket, count: entries });
    const name = `${bucket}${prefix ? `-${prefix.replace(/[^A-Za-z0-9._-]+/g, "_")}` : ""}.zip`;
    return new Response(stream, {
      headers: {
        "content-type": "application/zip",
        "content-disposition": `attachment; filename="${name}"`,
        "cache-control": "no-store",
      },
    });
  });

  return app;
}
