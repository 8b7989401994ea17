/**
 * Backup and restore (SPEC "Admin API → Backup"; the format is docs/BACKUP.md). Admin sessions
 * only: a backup holds every secret of the instance in the clear unless the caller gives a
 * password (`X-Svc-Backup-Password`, at least 12 characters), which seals every part with
 * AES-256-GCM. A header, not a query parameter, so the password stays out of access logs.
 *
 * - `GET /backup` streams `svc-backup-<time>.zip`: manifest, config document, IAM, secrets.
 * - `POST /backup` imports a zip (`application/zip`) or the legacy JSON `{users, groups}` body
 *   (`application/json`). The body is read bounded (413 beyond `maxBodyBytes`), every part is
 *   verified against the manifest and every record validated before the one IAM transaction; any
 *   refusal leaves the instance unchanged. The config part is never applied (see BACKUP.md).
 *   Refused in declarative IAM mode (403 `iam_declarative`: the YAML is authoritative there).
 *
 * Audited as `backup_exported` / `backup_imported` / `backup_import_refused` (who, from where,
 * counts; never a secret). Counted by `svc_admin_requests_total{area="backup"}`.
 */
import { type Context, Hono } from "hono";
import type { DbClient, IamStore } from "../../db/mod.ts";
import {
  BackupFormatError,
  backupParts,
  CONFIG_PART,
  type IamImport,
  importFromLegacyJson,
  importFromParts,
  importIam,
  MIN_PASSWORD_LENGTH,
  openBackup,
  writeBackup,
} from "../../backup/mod.ts";
import { assertNotBootstrapKey, IamError } from "../../iam/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import { readBounded } from "../../http/mod.ts";
import { type AuditFn, getLogger } from "../../observability/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { legacyBackupBody } from "./config-bodies.ts";

const log = getLogger("svc::admin");

/** Largest body POST /backup reads (zip or JSON). */
export const BACKUP_BODY_LIMIT = 16 << 20;
export const PASSWORD_HEADER = "x-svc-backup-password";

export interface BackupRoutesDeps {
  db: DbClient;
  store: Pick<IamStore, "snapshot">;
  config: Pick<ConfigPort, "current" | "document">;
  audit: AuditFn;
  /** Rebuilds the IAM index after an import; awaited before the response. */
  onChange: () => Promise<unknown>;
  svcVersion: string;
  maxBodyBytes?: number;
  /** PBKDF2 iterations of new encrypted backups (tests lower it). */
  kdfIterations?: number;
  now?: () => Date;
}

function requireAdmin(c: Context<AdminEnv>): void {
  if (!c.var.principal?.admin) {
    throw new AdminError("forbidden", "Backups need an admin session (they hold every secret)");
  }
}

function passwordOf(c: Context<AdminEnv>): string | undefined {
  const password = c.req.header(PASSWORD_HEADER);
  if (password === undefined) return undefined;
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new AdminError(
      "bad_request",
      `The backup password must have at least ${MIN_PASSWORD_LENGTH} characters`,
    );
  }
  return password;
}

/** `20261124T162210Z`: sortable, no characters a file name dislikes. */
function fileTime(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

async function readBody(c: Context<AdminEnv>, limit: number): Promise<Uint8Array> {
  const length = Number(c.req.header("content-length") ?? "0");
  if (length > limit) {
    throw new AdminError("payload_too_large", `Backup of ${length} bytes exceeds ${limit} bytes`);
  }
  if (c.req.raw.body === null) throw new AdminError("bad_request", "The backup body is empty");
  try {
    return await readBounded(c.req.raw.body, limit);
  } catch (err) {
    // readBounded refuses an oversized body with an SvcError; anything else (a client that
    // went away) is not the client's size problem.
    if (err instanceof SvcError) {
      throw new AdminError("payload_too_large", `Backup exceeds ${limit} bytes`);
    }
    throw err;
  }
}

/** Runs a step of the import, mapping format and validation refusals to 400 / 413. */
async function refusing<T>(fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof BackupFormatError) {
      throw new AdminError(err.tooLarge ? "payload_too_large" : "bad_request", err.message);
    }
    if (err instanceof IamError) {
      throw new AdminError(err.kind === "conflict" ? "conflict" : "bad_request", err.message);
    }
    throw err;
  }
}

export function backupRoutes(deps: BackupRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const limit = deps.maxBodyBytes ?? BACKUP_BODY_LIMIT;
  const now = deps.now ?? (() => new Date());

  app.get("/backup", async (c) => {
    requireAdmin(c);
    const password = passwordOf(c);
    const createdAt = now();
    const snapshot = await deps.store.snapshot();
    const { stream } = await writeBackup(backupParts(snapshot, deps.config.document()), {
      svcVersion: deps.svcVersion,
      createdAt,
      password,
      iterations: deps.kdfIterations,
    });
    deps.audit("backup_exported", {
      ...actorFields(c.var),
      users: snapshot.users.length,
      groups: snapshot.groups.length,
      encrypted: password !== undefined,
    }, "warn");
    return c.body(stream, 200, {
      "content-type": "application/zip",
      "content-disposition": `attachment; filename="svc-backup-${fileTime(createdAt)}.zip"`,
      "cache-control": "no-store",
    });
  });

  app.post("/backup", async (c) => {
    requireAdmin(c);
    try {
      return await importBackup(c);
    } catch (err) {
      const error = err instanceof AdminError ? err.code : "internal";
      deps.audit("backup_import_refused", { ...actorFields(c.var), error }, "warn");
      throw err;
    }
  });

  async function importBackup(c: Context<AdminEnv>): Promise<Response> {
    if (deps.config.current().access.iam_mode === "declarative") {
      throw new AdminError(
        "iam_declarative",
        "IAM is managed by the config file (access.iam_mode: declarative); a backup cannot be " +
          "imported over it: restore access.iam_users / access.iam_groups in the YAML instead",
      );
    }
    const type = (c.req.header("content-type") ?? "").split(";")[0].trim().toLowerCase();
    let plan: IamImport;
    let ignoredParts: string[] = [];
    let format: "zip" | "legacy_json";
    let source: Record<string, unknown> = {};
    let configPresent = false;
    if (type === "application/zip" || type === "application/x-zip-compressed") {
      format = "zip";
      const password = passwordOf(c);
      const body = await readBody(c, limit);
      const opened = await refusing(() =>
        openBackup(body, {
          password,
          limits: { maxEntryBytes: limit * 4, maxTotalBytes: limit * 4, maxEntries: 64 },
        })
      );
      ({ iam: plan, ignoredParts } = await refusing(() => importFromParts(opened.parts)));
      configPresent = opened.parts.has(CONFIG_PART);
      source = {
        svc_version: opened.manifest.svc_version,
        created_at: opened.manifest.created_at,
        format_version: opened.manifest.format_version,
        encrypted: opened.manifest.encryption !== null,
      };
    } else if (type === "application/json") {
      format = "legacy_json";
      const body = await validBody(c, legacyBackupBody, { what: "JSON backup", maxBytes: limit });
      plan = await refusing(() => importFromLegacyJson(body));
    } else {
      throw new AdminError(
        "unsupported_media_type",
        `Content-Type "${type}" is not a backup (send application/zip, or application/json ` +
          "for the legacy JSON form)",
      );
    }
    // Before the transaction: a record holding the bootstrap key id refuses the whole import.
    const bootstrapKeyId = deps.config.current().access.access_key_id;
    await refusing(() => {
      plan.users.forEach((user, i) =>
        assertNotBootstrapKey(user, bootstrapKeyId, `Backup user ${i} ("${user.name}")`)
      );
    });
    const counts = await refusing(() => importIam(deps.db, plan));
    await deps.onChange();
    const warnings = [...plan.warnings];
    if (counts.external_identities_skipped > 0) {
      warnings.push(
        `${counts.external_identities_skipped} external identities were not restored ` +
          "(this build has no external identity store)",
      );
      log.warn("backup import dropped external identities", {
        count: counts.external_identities_skipped,
      });
    }
    for (const part of ignoredParts) warnings.push(`Part "${part}" is unknown to this build`);
    const { skipped_users, ...counters } = counts;
    deps.audit("backup_imported", {
      ...actorFields(c.var),
      format,
      ...counters,
      ...(ignoredParts.length > 0 ? { ignored_parts: ignoredParts } : {}),
    }, "warn");
    return c.json({
      ...counters,
      skipped_users,
      format,
      backup: source,
      config: {
        present: configPresent,
        applied: false,
        note: "The config part is never applied by an import; restore it with POST " +
          "/config/apply or svc config apply (see docs/BACKUP.md)",
      },
      ignored_parts: ignoredParts,
      warnings,
    });
  }

  return app;
}
