/**
 * svc command line: `svc [serve] [--config <path>] [--listen <addr>] [--verbose]`, and the
 * `svc config lint|defaults|apply …` subcommands (src/cli/config-command.ts), `svc admission
 * trace …` (src/cli/admission-command.ts) and `svc admin …` (src/cli/admin/, docs/CLI.md).
 */
import {
  formatVersion,
  runAdminCommand,
  runAdmissionCommand,
  runConfigCommand,
  versionInfo,
} from "./src/cli/mod.ts";
import { ConfigError, loadConfig } from "./src/config/mod.ts";
import { configureLogging, getLogger, resolveLogLevel } from "./src/observability/mod.ts";
import {
  checkBackendSettings,
  checkStartupAuth,
  DataDirectoryInUse,
  lockDataDirectories,
  openSvc,
  processClock,
  reloadOnHangup,
  startServer,
  StartupError,
  TEST_CLOCK_VARIABLE,
  testClockOffsetSecs,
} from "./src/runtime/mod.ts";
import { VERSION } from "./src/lib/mod.ts";

const USAGE = `svc ${VERSION} — S3-compatible object-storage proxy

Usage:
  svc [serve] [--config <path>] [--listen <host:port>] [--verbose]
  svc config lint <file>                 (exit 0 valid, 3 I/O, 4 parse, 6 validation)
  svc config defaults [--section <name>] (JSON Schema with defaults)
  svc config apply <file> --server <url> [--dry-run]
                                         (apply to a running server; SVC_BOOTSTRAP_PASSWORD)
  svc admission trace --config <file> --method GET --path /bucket/key
                      [--source-ip <ip>] [--authenticated] [--json]
                                         (which admission block decides a request)
  svc admin <command> [options]          (administer a running server over its admin API:
                                         login, users, buckets, jobs, backup, …; docs/CLI.md;
                                         svc admin --help lists the commands)
  svc --version | version               (version, git commit, Deno version)
  svc --help

Configuration comes from --config, else SVC_CONFIG, else ./svc.yaml, ./svc.yml,
/etc/svc/config.yaml, /etc/svc/config.yml; SVC_* environment variables override the file and
--listen overrides both. Without any file svc uses its built-in defaults (data in ./data,
listening on 0.0.0.0:9000) and still needs credentials: SVC_ACCESS_KEY_ID and
SVC_SECRET_ACCESS_KEY, or SVC_AUTHENTICATION=none to run without authentication.
`;

interface Cli {
  command: "serve" | "help" | "version";
  config?: string;
  listen?: string;
  verbose: boolean;
}

export function parseArgs(args: string[]): Cli {
  const cli: Cli = { command: "serve", verbose: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => {
      const next = args[++i];
      if (next === undefined || next === "") throw new ConfigError(`${arg} needs a value`);
      return next;
    };
    const inline = (flag: string) => {
      const given = arg.slice(flag.length + 1);
      if (given === "") throw new ConfigError(`${flag} needs a value`);
      return given;
    };
    if (arg === "serve") cli.command = "serve";
    else if (arg === "--help" || arg === "-h" || arg === "help") cli.command = "help";
    else if (arg === "--version" || arg === "-V" || arg === "version") cli.command = "version";
    else if (arg === "--verbose" || arg === "-v") cli.verbose = true;
    else if (arg === "--config" || arg === "-c") cli.config = value();
    else if (arg.startsWith("--config=")) cli.config = inline("--config");
    else if (arg === "--listen" || arg === "-l") cli.listen = value();
    else if (arg.startsWith("--listen=")) cli.listen = inline("--listen");
    else throw new ConfigError(`Unknown argument "${arg}" (see svc --help)`);
  }
  return cli;
}

async function main(args: string[]): Promise<number> {
  if (args[0] === "config") return await runConfigCommand(args.slice(1));
  if (args[0] === "admission") return await runAdmissionCommand(args.slice(1));
  if (args[0] === "admin") return await runAdminCommand(args.slice(1));
  let cli: Cli;
  try {
    cli = parseArgs(args);
  } catch (err) {
    console.error(`svc: ${(err as Error).message}`);
    return 2;
  }
  if (cli.command === "help") {
    console.log(USAGE);
    return 0;
  }
  if (cli.command === "version") {
    console.log(formatVersion(await versionInfo()));
    return 0;
  }
  const env = Deno.env.toObject();
  try {
    const loaded = await loadConfig({ configPath: cli.config, listen: cli.listen, env });
    const advanced = loaded.config.advanced;
    configureLogging({
      filter: resolveLogLevel({ env, fileLevel: advanced.log_level, verbose: cli.verbose }),
      format: advanced.log_format,
      ringSize: advanced.log_ring_size,
      ringLevel: advanced.log_ring_level,
      auditRingSize: advanced.audit_ring_size,
    });
    const log = getLogger("svc");
    for (const warning of loaded.warnings) log.warn(warning);
    log.info(`svc ${VERSION} starting`, { config: loaded.path ?? "(embedded defaults)" });
    for (const warning of checkStartupAuth(loaded.config.access)) log.warn(warning);
    const clockOffset = testClockOffsetSecs(env);
    if (clockOffset !== 0) {
      log.warn(
        `${TEST_CLOCK_VARIABLE}=${clockOffset}: object timestamps and job ages are shifted by ` +
          `${clockOffset} s (a test aid; never set it in production)`,
      );
    }
    // Before anything is written: a config that cannot start is refused first, and a second svc
    // on these directories must change nothing.
    await checkBackendSettings(loaded.config);
    await lockDataDirectories(loaded.config);
    const svc = await openSvc(loaded.config, {
      clock: processClock(env),
      env: Deno.env.toObject(),
      runtime: {
        document: loaded.document,
        persistPath: loaded.persistPath,
        env: () => Deno.env.toObject(),
        listen: cli.listen,
        verbose: cli.verbose,
      },
    });
    const { runtime } = svc;
    const server = await startServer(svc);
    // Awaited before exit: stopping closes the admin plane, which commits buffered events.
    let stopped: Promise<void> | undefined;
    const stop = () => {
      log.info("shutting down");
      stopped ??= server.stop();
    };
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
    // SIGHUP re-reads the file and environment and applies what can change while running.
    reloadOnHangup(runtime, {
      configPath: cli.config,
      listen: cli.listen,
      env: () => Deno.env.toObject(),
    });
    await server.finished;
    await stopped;
    return 0;
  } catch (err) {
    if (
      err instanceof ConfigError || err instanceof StartupError || err instanceof DataDirectoryInUse
    ) {
      console.error(`svc: ${err.message}`);
      return 1;
    }
    console.error(`svc: failed to start: ${(err as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
