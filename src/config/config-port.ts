/**
 * The port every config change goes through (SIGHUP, the config and backends admin APIs, rule
 * jobs that edit their own rules, the cluster config sync). The runtime implements it; it lives
 * in the config room so the rooms that change config (jobs, admin, db) need not import the
 * runtime or each other.
 */
import type { Config } from "./schema/schema.ts";

/** Where a config change came from; recorded in the `config_changed` audit entry. */
export type ConfigSource = "startup" | "sighup" | "admin_api" | "cli";

export interface ApplyRequest {
  /**
   * The whole new document as the operator's config file should read: sectioned, secrets present,
   * `${env:…}` placeholders as written. Environment overrides (SVC_*) are applied on top by the
   * runtime and never persisted.
   */
  document: Record<string, unknown>;
  source: ConfigSource;
  /** Validate and report only: nothing changes, nothing is written. */
  dryRun: boolean;
  /** Write the document to the config file (temp + fsync + rename) before it takes effect. */
  persist: boolean;
  /** Who asked, for the audit entry. */
  actor?: { user: string; ip: string };
}

export interface ApplyOutcome {
  /** Changed settings now in effect (dotted paths); on a dry run, those that would be. */
  applied: string[];
  /** Changed settings that take effect at the next start. */
  requires_restart: string[];
  /** Load/validation warnings, advisories, and settings accepted but not built yet. */
  warnings: string[];
  persisted: boolean;
  /** The config file written (or that would be written), null when nothing is persisted. */
  persisted_path: string | null;
}

export interface ConfigPort {
  /** The running configuration (environment overrides applied, validated). */
  current(): Config;
  /**
   * The operator's document as the config file holds it (sectioned; placeholders unexpanded;
   * secrets present). Never send it to a client as is: redact first.
   */
  document(): Record<string, unknown>;
  /**
   * The one path every config change takes (SIGHUP, config API, backends API). Throws ConfigError
   * on an invalid document (nothing changed) and AdminError `persist_failed` when the file cannot
   * be written (nothing changed).
   */
  apply(request: ApplyRequest): Promise<ApplyOutcome>;
}
