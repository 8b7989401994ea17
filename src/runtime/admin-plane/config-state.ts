/**
 * The encrypted config database of the admin plane, opened under `<data>/.svc` with a key derived
 * from the bootstrap password hash, and what it decides for the rest of svc: whether S3 may serve
 * (not while a database set aside after a bootstrap-hash mismatch awaits recovery) and the
 * database's readiness check.
 *
 * The database stays where it was opened for the life of the process: moving the data directory
 * by a config change moves objects, not the admin state (it takes effect at the next start).
 */
import { BootstrapPassword } from "../../admin/mod.ts";
import { type Config, stateDirOf } from "../../config/mod.ts";
import { type ConfigDb, openConfigDb } from "../../db/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import type { CheckReport } from "../readiness.ts";
import { removeInterruptedWrites } from "../../lib/mod.ts";

const log = getLogger("svc::admin");

export interface ConfigState {
  password: BootstrapPassword;
  db: ConfigDb;
  /** `<data>/.svc`, where the database and the admin plane's files live. */
  stateDir: string;
  /** Why S3 must answer 503 now, or null when it may serve. */
  s3Unavailable(): string | null;
  /** The config database's readiness check. */
  readiness(): Promise<CheckReport>;
}

/** The state directory of the admin plane: `<data>/.svc`. */
export function adminStateDir(config: Config): string {
  return `${stateDirOf(config)}/.svc`;
}

export async function openConfigState(
  config: Config,
  options: { env: Record<string, string | undefined>; bcryptCost?: number },
): Promise<ConfigState> {
  const stateDir = adminStateDir(config);
  // A password change a crash interrupted leaves the hash it never committed in a temp file.
  const interrupted = await removeInterruptedWrites(stateDir);
  if (interrupted.length > 0) {
    log.warn("removed files an interrupted write left behind", { files: interrupted.join(", ") });
  }
  const password = await BootstrapPassword.resolve({
    env: options.env,
    configHash: config.advanced.bootstrap_password_hash,
    stateDir,
    bcryptCost: options.bcryptCost,
  });
  const db = await openConfigDb({ dir: stateDir, passwordHash: password.hash });
  if (db.state.status === "mismatch") {
    log.error(
      "the config database does not open with the bootstrap password hash in force; it was " +
        "moved aside and S3 answers 503 until an operator logs in and calls POST " +
        "/_/api/admin/recover-db (or svc restarts with the hash that opens it)",
      { aside: db.state.asidePath, hash_source: password.sourceLabel },
    );
  }
  return {
    password,
    db,
    stateDir,
    s3Unavailable: () =>
      db.state.status === "mismatch"
        ? "The config database is being recovered after a bootstrap password hash change; " +
          "an operator must call POST /_/api/admin/recover-db"
        : null,
    async readiness(): Promise<CheckReport> {
      if (db.state.status === "mismatch") {
        return { status: "error", error: "config database awaiting recovery" };
      }
      try {
        await db.ping();
        return { status: "ok", schema_version: await db.schemaVersion() };
      } catch (err) {
        return { status: "error", error: (err as Error).message };
      }
    },
  };
}
