/**
 * A replication world for unit tests: one real object service over a filesystem backend in a
 * temp directory (source and destination are two of its buckets), the rule env over it, and a
 * run context whose state persists in memory like the rule's row.
 */
import type { RuleEnv } from "../jobs/rules/rule-env.ts";
import { detachedMetrics } from "./rule-env-fixtures.ts";
import type { ReplicationRule } from "../config/schema/schema-jobs.ts";
import { buildConfig } from "../config/load.ts";
import type { Config } from "../config/schema/schema.ts";
import { ObjectService } from "../objects/object-service.ts";
import type { Metrics } from "../observability/metrics.ts";
import { FilesystemBackend } from "../storage/fs/filesystem-backend.ts";
import { systemClock } from "../jobs/clock.ts";
import type { RunContext } from "../jobs/rules/rule-model.ts";
import { RunRecorder } from "../jobs/rules/run-recorder.ts";

export interface World {
  objects: ObjectService;
  env: RuleEnv;
  metrics: Metrics;
  /** Buckets whose writes a maintenance job holds. */
  gated: Set<string>;
  /** Runs before every copy the env's object service makes (inject trouble here). */
  hooks: { beforeCopy?: (key: string) => Promise<void> };
  /** Source keys copied so far, in order. */
  copied: string[];
  put(bucket: string, key: string, body: string): Promise<void>;
  read(bucket: string, key: string): Promise<string | null>;
  /** Keys of a bucket, sorted. */
  keys(bucket: string): Promise<string[]>;
}

export function ruleOf(extra: Partial<ReplicationRule> = {}): ReplicationRule {
  return {
    name: "r",
    enabled: true,
    source: { bucket: "src", prefix: "" },
    destination: { bucket: "dst" },
    interval: "24h",
    batch_size: 1000,
    replicate_deletes: false,
    conflict: "newer-wins",
    include_globs: [],
    exclude_globs: [],
    ...extra,
  };
}

export async function withWorld(
  fn: (world: World) => Promise<void>,
  config: Config = buildConfig({ access: { authentication: "none" } }, { env: {} }).config,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-replication-" });
  try {
    const backend = await FilesystemBackend.open(dir);
    const objects = new ObjectService(backend, () => ({ maxObjectSize: 1 << 30 }));
    await objects.createBucket("src");
    await objects.createBucket("dst");
    const metrics = detachedMetrics();
    const gated = new Set<string>();
    const hooks: World["hooks"] = {};
    const copied: string[] = [];
    const watched = new Proxy(objects, {
      get(target, name, receiver) {
        if (name === "copy") {
          return async (...args: Parameters<ObjectService["copy"]>) => {
            await hooks.beforeCopy?.(args[0].key);
            const info = await target.copy(...args);
            copied.push(args[0].key);
            return info;
          };
        }
        const value = Reflect.get(target, name, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const env: RuleEnv = {
      config: () => config,
      objects: () => watched,
      backendKind: () => Promise.resolve("filesystem"),
      gatedBy: (bucket) => gated.has(bucket) ? "maintenance:1" : undefined,
      recordEvent: () => {},
      metrics,
      clock: systemClock,
    };
    await fn({
      objects,
      env,
      metrics,
      gated,
      hooks,
      copied,
      async put(bucket, key, body) {
        await objects.put(bucket, key, ReadableStream.from([new TextEncoder().encode(body)]), {
          metadata: { contentType: "text/plain", userMeta: { origin: key }, headers: {} },
        });
      },
      async read(bucket, key) {
        try {
          const { body } = await objects.get(bucket, key);
          return await new Response(body).text();
        } catch {
          return null;
        }
      },
      async keys(bucket) {
        const page = await objects.listObjects(bucket, { prefix: "", maxKeys: 100_000 });
        return page.objects.map((o) => o.key);
      },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A run context like the scheduler's, its state kept in `state` between runs. */
export function contextOf(
  state: Record<string, unknown>,
  options: { signal?: AbortSignal; dryRun?: boolean; onSave?: () => void } = {},
): RunContext & { recorder: RunRecorder } {
  return {
    trigger: "run-now",
    dryRun: options.dryRun ?? false,
    signal: options.signal ?? new AbortController().signal,
    clock: systemClock,
    recorder: new RunRecorder(100, () => Date.now()),
    state,
    saveState(next) {
      Object.assign(state, next);
      options.onSave?.();
      return Promise.resolve();
    },
  };
}
