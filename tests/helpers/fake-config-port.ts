/**
 * A ConfigPort for route and CLI tests, standing in for the runtime's one apply path. It runs the
 * REAL validation (an invalid document throws the real ConfigError, nothing changes), records every
 * request it is given, and can be told to fail persisting (AdminError `persist_failed`, nothing
 * changes), as the runtime does when the config file cannot be written. It does not expand
 * placeholders or write files: those belong to the runtime.
 */
import type { ApplyOutcome, ApplyRequest, ConfigPort } from "../../src/admin/admin-deps.ts";
import { AdminError } from "../../src/admin/admin-error.ts";
import { type Config, validateConfigWithWarnings } from "../../src/config/schema.ts";

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

  constructor(document: Record<string, unknown>, path = "/etc/svc/config.yaml") {
    this.#document = structuredClone(document);
    this.#config = validateConfigWithWarnings(document).config;
    this.path = path;
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
      const { config, warnings } = validateConfigWithWarnings(request.document);
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
