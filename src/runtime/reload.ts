/**
 * Reloading the configuration of a running server on SIGHUP: the file and environment are read
 * again exactly as at start, validated in full, and applied. An invalid document changes
 * nothing; the outcome is logged and recorded in the audit ring as `config_changed`.
 */
import { loadConfig } from "../config/load.ts";
import { activeLogging, getLogger, setLogFilter } from "../observability/log.ts";
import { resolveLogLevel } from "../observability/log-level.ts";
import type { ApplyResult } from "./apply.ts";
import type { RunningServer } from "./server.ts";

const log = getLogger("svc::runtime");

export interface ReloadOptions {
  configPath?: string;
  listen?: string;
  verbose: boolean;
  env: () => Record<string, string | undefined>;
}

/** Reads, validates and applies the configuration once; null when it was refused. */
export async function reloadConfig(
  server: Pick<RunningServer, "apply">,
  options: ReloadOptions,
): Promise<ApplyResult | null> {
  const env = options.env();
  try {
    const loaded = await loadConfig({
      configPath: options.configPath,
      listen: options.listen,
      env,
    });
    const result = await server.apply(loaded.config);
    if (result.applied.includes("advanced.log_level")) {
      setLogFilter(resolveLogLevel({
        env,
        fileLevel: loaded.config.advanced.log_level,
        verbose: options.verbose,
      }));
    }
    const warnings = [...loaded.warnings, ...result.warnings];
    log.info("config reloaded", {
      applied: result.applied,
      requires_restart: result.requires_restart,
      warnings,
    });
    if (result.applied.length + result.requires_restart.length > 0) {
      activeLogging().auditRing.record("config_changed", {
        source: "reload",
        applied: result.applied,
        requires_restart: result.requires_restart,
      }, "info");
    }
    return { ...result, warnings };
  } catch (err) {
    log.error("config reload refused; the running configuration is unchanged", {
      error: (err as Error).message,
    });
    return null;
  }
}

/** Reloads on every SIGHUP; returns the function that removes the listener. */
export function reloadOnHangup(server: Pick<RunningServer, "apply">, options: ReloadOptions) {
  const listener = () => void reloadConfig(server, options);
  Deno.addSignalListener("SIGHUP", listener);
  return () => Deno.removeSignalListener("SIGHUP", listener);
}
