/**
 * A ConfigPort for route and CLI tests, standing in for the runtime's one apply path. It runs the
 * REAL validation (an invalid document throws the real ConfigError, nothing changes), records every
 * request it is given, and can be told to fail persisting (AdminError `persist_failed`, nothing
 * changes), as the runtime does when the config file cannot be written. It writes no file. What
 * the runtime does between the document and the running config (expanding placeholders, applying
 * SVC_* overrides) is stood in for by an optional `toRunning` transform of the document.
 */
import type { ApplyOutcome, ApplyRequest, ConfigPort } from "../../src/config/config-port.ts";
import { AdminError } from "../../src/admin/admin-error.ts";
import { type Config, validateConfigWithWarnings } from "../../src/config/schema/schema.ts";

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Dotted paths whose values differ (objects compared member by member, the rest as JSON). */
function changedPaths(before: unknown, after: unknown, path = ""): string[] {
  if (isObject(before) && isObject(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].flatMap((key) =>
      changedPaths(before[key], after[key], path ? `${path}.${key}` : key)
    );
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [path];
}

export class FakeConfigPort implements ConfigPort {
  readonly requests: ApplyRequest[] = [];
  failPersist = false;
  readonly path: string;
  #document: Record<string, unknown>;
  #config: Config;

  readonly #toRunning: (document: Record<string, unknown>) => Record<string, unknown>;

  constructor(
    document: Record<string, unknown>,
    options: {
      path?: string;
      toRunning?: (document: Record<string, unknown>) => Record<string, unknown>;
    } = {},
  ) {
    this.#toRunning = options.toRunning ?? ((doc) => doc);
    this.#document = structuredClone(document);
    this.#config = validateConfigWithWarnings(this.#toRunning(structuredClone(document))).config;
    this.path = options.path ?? "/etc/svc/config.yaml";
  }

  current(): Config {
    return this.#config;
  }

  document(): Record<string, unknown> {
    return structuredClone(this.#document);
  }

  apply(request: ApplyRequest): Promise<ApplyOutcome> {
    this.requests.push(structuredClone(request));
    try {
      const running = this.#toRunning(structuredClone(request.document));
      const { config, warnings } = validateConfigWithWarnings(running);
      if (request.dryRun) {
        return Promise.resolve({
          applied: [],
          requires_restart: [],
          warnings,
          persisted: false,
          persisted_path: null,
        });
      }
      if (request.persist && this.failPersist) {
        throw new AdminError(
          "persist_failed",
          `Cannot write the config file "${this.path}": read-only file system; nothing changed`,
        );
      }
      const applied = changedPaths(this.#config, config);
      this.#document = structuredClone(request.document);
      this.#config = config;
      return Promise.resolve({
        applied,
        requires_restart: applied.filter((path) => path === "advanced.listen_addr"),
        warnings,
        persisted: request.persist,
        persisted_path: request.persist ? this.path : null,
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The live (non-dry-run) requests. */
  get liveRequests(): ApplyRequest[] {
    return this.requests.filter((request) => !request.dryRun);
  }
}
