/**
 * `applyConfig`: the one path every configuration change takes — SIGHUP, the config API, the
 * backends API, `svc config apply`. Each change is validated in full, then prepared (a new
 * storage stack is opened when backends change), then persisted when asked, then swapped in, then
 * audited. Anything that fails before the swap changes nothing; changes run one at a time.
 *
 * The document it works on is the operator's file document (see LoadedConfig.document):
 * environment overrides are applied on top for the running config and never written to the file.
 * `${env:…}` placeholders are expanded for documents read from disk; in a document an admin sent,
 * only strings that stand unchanged at the same place in the file document are expanded (they
 * came from the file), so a placeholder-looking string in a request body stays a literal value.
 */
import { isPlainObject as isObject } from "../lib/mod.ts";
import { AdminError } from "../admin/mod.ts";
import {
  type ApplyOutcome,
  type ApplyRequest,
  buildConfig,
  type Config,
  ConfigError,
  ConfigPersistError,
  type ConfigPort,
  expandPlaceholders,
  writeConfigFile,
} from "../config/mod.ts";
import { getLogger, type LogLevel, resolveLogLevel, setLogFilter } from "../observability/mod.ts";
import { planApply } from "./apply.ts";
import type { Services } from "./services.ts";
import { checkStartupAuth, StartupError } from "./startup-checks.ts";
import { checkRemovedBackends, needsRebuild, openStorageStack } from "./storage-stack.ts";
import { auditModeChange, type IamReconcilePort, prepareIamStep } from "./config-iam.ts";

const log = getLogger("svc::runtime");

export interface ConfigRuntimeOptions {
  /** The operator's document the running config was built from. */
  document: Record<string, unknown>;
  /** Where an apply with `persist` writes the document. */
  persistPath: string;
  env: () => Record<string, string | undefined>;
  /** `--listen`, which overrides file and environment on every apply. */
  listen?: string;
  verbose: boolean;
  /** Declarative IAM reconciles through this (the IAM plane's); null: no config database. */
  iamReconciler: IamReconcilePort | null;
}

type Json = unknown;

/** An apply that carries its own IAM to reconcile (`/config/declarative-iam-apply`). */
export interface IamApplyRequest extends ApplyRequest {
  /** The `access` fragment with export-only fields (auth_source, external_identities). */
  iamAccess?: Record<string, unknown>;
}

/** Expands placeholders only in strings equal to the previous document's at the same place. */
export function expandUnchanged(
  next: Json,
  previous: Json,
  env: Record<string, string | undefined>,
  path = "",
): Json {
  if (typeof next === "string") {
    return next === previous ? expandPlaceholders(next, env, path) : next;
  }
  if (Array.isArray(next)) {
    const before = Array.isArray(previous) ? previous : [];
    return next.map((item, i) => expandUnchanged(item, before[i], env, `${path}[${i}]`));
  }
  if (isObject(next)) {
    const before = isObject(previous) ? previous : {};
    const out: Record<string, Json> = {};
    for (const [key, value] of Object.entries(next)) {
      out[key] = expandUnchanged(value, before[key], env, path ? `${path}.${key}` : key);
    }
    return out;
  }
  return next;
}

export class ConfigRuntime implements ConfigPort {
  readonly #services: Services;
  readonly #options: ConfigRuntimeOptions;
  #document: Record<string, unknown>;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(services: Services, options: ConfigRuntimeOptions) {
    this.#services = services;
    this.#options = options;
    this.#document = structuredClone(options.document);
  }

  get persistPath(): string {
    return this.#options.persistPath;
  }

  current(): Config {
    return this.#services.config.current;
  }

  document(): Record<string, unknown> {
    return structuredClone(this.#document);
  }

  apply(request: IamApplyRequest): Promise<ApplyOutcome> {
    const run = this.#queue.then(() => this.#apply(request));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** The running config a document would give; throws ConfigError. */
  #build(request: ApplyRequest): { config: Config; warnings: string[] } {
    const env = this.#options.env();
    const fromDisk = request.source === "sighup" || request.source === "startup";
    const expanded = fromDisk
      ? expandPlaceholders(request.document, env)
      : expandUnchanged(request.document, this.#document, env);
    const built = buildConfig(expanded as Record<string, unknown>, {
      env,
      listen: this.#options.listen,
    });
    try {
      // Refused before any change: a new config must not leave the server open by accident.
      checkStartupAuth(built.config.access);
    } catch (err) {
      if (err instanceof StartupError) throw new ConfigError(err.message);
      throw err;
    }
    return built;
  }

  async #apply(request: IamApplyRequest): Promise<ApplyOutcome> {
    const services = this.#services;
    const built = this.#build(request);
    const running = services.config.current;
    const { snapshot, result } = planApply(running, built.config);
    const warnings = [...built.warnings, ...result.warnings];
    const persistPath = request.persist ? this.#options.persistPath : null;
    const outcome: ApplyOutcome = {
      applied: result.applied,
      requires_restart: result.requires_restart,
      warnings,
      persisted: false,
      persisted_path: persistPath,
    };
    // Declarative IAM is checked against the database before anything is written.
    const iamStep = await prepareIamStep(this.#options.iamReconciler, {
      running: running.access,
      next: built.config.access,
      iamAccess: request.iamAccess,
      dryRun: request.dryRun,
    });
    warnings.push(...iamStep.warnings);
    if (request.dryRun) return outcome;

    // Prepare: backends that fail to open (no xattrs, no access, one removed while in use)
    // change nothing.
    let fresh = null;
    if (needsRebuild(services.storage, snapshot)) {
      await checkRemovedBackends(services.storage, snapshot);
      fresh = await openStorageStack(snapshot, () => services.config.current, services.metrics, {
        probe: snapshot.advanced.boot_backend_probe === "off" ? "off" : "warn",
        now: services.clock.now,
      });
    }
    if (persistPath !== null) {
      try {
        await writeConfigFile(persistPath, request.document);
      } catch (err) {
        fresh?.stop();
        if (err instanceof ConfigPersistError) {
          throw new AdminError("persist_failed", err.message, { persisted_path: persistPath });
        }
        throw err;
      }
      outcome.persisted = true;
    }

    // Commit. The IAM transaction goes first: when it fails, the file is put back and nothing
    // else has changed.
    const who = {
      source: request.source,
      user: request.actor?.user ?? null,
      ip: request.actor?.ip ?? null,
    };
    const audit = (event: string, fields: Record<string, unknown>, level?: LogLevel) =>
      void services.logging.auditRing.record(event, fields, level);
    if (iamStep.commit !== null) {
      try {
        warnings.push(...await iamStep.commit(audit, who));
      } catch (err) {
        fresh?.stop();
        if (outcome.persisted) await writeConfigFile(persistPath!, this.#document).catch(() => {});
        throw err;
      }
    }
    auditModeChange(running.access, snapshot.access, audit, who);
    this.#document = structuredClone(request.document);
    services.config.swap(snapshot);
    if (fresh) {
      services.replaceStorage(fresh).stop();
      log.info("storage rebuilt for the new backend settings", {
        backends: [...fresh.backends.keys()].join(","),
        state_dir: fresh.stateDir,
      });
    }
    services.admission(); // rebuilt now, so its warnings belong to this change
    if (result.applied.includes("advanced.log_level")) {
      setLogFilter(resolveLogLevel({
        env: this.#options.env(),
        fileLevel: snapshot.advanced.log_level,
        verbose: this.#options.verbose,
      }));
    }
    log.info(request.source === "sighup" ? "config reloaded" : "config applied", {
      source: request.source,
      applied: result.applied,
      requires_restart: result.requires_restart,
      persisted_path: outcome.persisted ? persistPath : null,
      warnings,
    });
    if (result.applied.length + result.requires_restart.length > 0 || outcome.persisted) {
      services.logging.auditRing.record("config_changed", {
        source: request.source,
        user: request.actor?.user ?? null,
        ip: request.actor?.ip ?? null,
        applied: result.applied,
        requires_restart: result.requires_restart,
        persisted: outcome.persisted,
      }, "info");
    }
    return outcome;
  }
}
