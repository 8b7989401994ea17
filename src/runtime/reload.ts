/**
 * Reloading the configuration of a running server on SIGHUP: the file and environment are read
 * again exactly as at start and handed to the one apply path (config-runtime.ts), which
 * validates in full, applies, and audits `config_changed`. An invalid document changes nothing.
 */
import { type ApplyOutcome, type ConfigPort, loadConfig } from "../config/mod.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::runtime");

export interface ReloadOptions {
  configPath?: string;
  listen?: string;
  env: () => Record<string, string | undefined>;
}

/** Reads the file and applies it once; null when it was refused. */
export async function reloadConfig(
  runtime: Pick<ConfigPort, "apply">,
  options: ReloadOptions,
): Promise<ApplyOutcome | null> {
  try {
    const loaded = await loadConfig({
      configPath: options.configPath,
      listen: options.listen,
      env: options.env(),
    });
    return await runtime.apply({
      document: loaded.document,
      source: "sighup",
      dryRun: false,
      persist: false,
    });
  } catch (err) {
    log.error("config reload refused; the running configuration is unchanged", {
      error: (err as Error).message,
    });
    return null;
  }
}

/** Reloads on every SIGHUP; returns the function that removes the listener. */
export function reloadOnHangup(runtime: Pick<ConfigPort, "apply">, options: ReloadOptions) {
  const listener = () => void reloadConfig(runtime, options);
  Deno.addSignalListener("SIGHUP", listener);
  return () => Deno.removeSignalListener("SIGHUP", listener);
}
