/**
 * The storage side of a running svc, built once from the loaded configuration: the config
 * snapshot, the metrics registry, the storage stack, usage counters, admission and the write gate.
 * The S3 surface (s3-surface.ts) and the admin plane are built on it; nothing reaches for a
 * global. The storage stack is the one member a config change may replace (config-runtime.ts
 * swaps it), so it is read through `storage` each time.
 */
import { type AdmissionChain, admissionChainSource } from "../admission/mod.ts";
import { backendPlanOf, type Config } from "../config/mod.ts";
import { Semaphore, VERSION } from "../lib/mod.ts";
import {
  activeLogging,
  type AuthCounts,
  createMetrics,
  getLogger,
  type IamIndexStats,
  type Logging,
  type Metrics,
} from "../observability/mod.ts";
import { UsageCounter, type WriteObserver } from "../objects/mod.ts";
import { usageScanSource } from "./usage-source.ts";
import { BucketWriteGate } from "../s3/mod.ts";
import { type Clock, systemClock } from "../jobs/mod.ts";
import { openStorageStack, type StorageStack } from "./storage-stack.ts";

const log = getLogger("svc::delta");

/** Holds the current config snapshot; readers take `current` once per request. */
export class ConfigHolder {
  #current: Config;
  constructor(initial: Config) {
    this.#current = initial;
  }
  get current(): Config {
    return this.#current;
  }
  swap(next: Config): void {
    this.#current = next;
  }
}

export interface Services {
  config: ConfigHolder;
  /**
   * The clock objects are stamped with and jobs judge ages by: the system clock, or shifted by
   * the test aid `SVC_TEST_CLOCK_OFFSET_SECS` (runtime/test-clock.ts). Never request auth.
   */
  clock: Clock;
  /** The storage stack in use (replaced when a config change rebuilds it). */
  readonly storage: StorageStack;
  replaceStorage(next: StorageStack): StorageStack;
  /**
   * Registers a write observer with the object service in use and with every one a config
   * change brings (the event outbox); returns the unregistration.
   */
  addWriteObserver(observer: WriteObserver): () => void;
  metrics: Metrics;
  logging: Logging;
  /** The admission chain of the current snapshot (rebuilt when the snapshot changes). */
  admission: () => AdmissionChain;
  semaphore: Semaphore;
  /** Buckets held by maintenance jobs (S3 writes 503 SlowDown) and writes in flight per bucket. */
  maintenanceGate: BucketWriteGate;
  /**
   * The per-bucket usage counters (quotas, `/_/stats`, `/usage`): one for the life of the
   * process, observing every object service the storage stack brings; the admin plane persists it.
   */
  usage: UsageCounter;
  stop(): void;
}

/**
 * What the registry reads at scrape time from parts built after it (the authenticator, the IAM
 * index): they come later because the config database opens after the storage stack, and a
 * scrape needs the listener, which opens last. Absent or null: zero counts, no IAM index.
 */
export interface ScrapeSources {
  authStats?: () => AuthCounts | null;
  iamIndex?: () => IamIndexStats | null;
}

const NO_AUTH_COUNTS: AuthCounts = {
  attempts: { success: 0, failure: 0 },
  failures: { missing_header: 0, invalid_presigned: 0, invalid_signature: 0 },
};

function defaultBackendType(config: Config): string {
  const plan = backendPlanOf(config);
  return plan.specs.find((spec) => spec.name === plan.defaultName)?.type ?? "filesystem";
}

export async function openServices(
  config: Config,
  options: { clock?: Clock; scrape?: ScrapeSources } = {},
): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const holder = new ConfigHolder(config);
  const logging = activeLogging();
  let stack: StorageStack | undefined;
  const maintenanceGate = new BucketWriteGate();
  const metrics = createMetrics({
    version: VERSION,
    backendType: defaultBackendType(config),
    authStats: () => options.scrape?.authStats?.() ?? NO_AUTH_COUNTS,
    // The stack feeds the registry, so it is opened after it and read at scrape time.
    codecSlots: () => stack?.delta.pool.available ?? 0,
    iamIndex: options.scrape?.iamIndex,
    writeGate: () => ({ held: maintenanceGate.held().size, fenced: maintenanceGate.fencedCount() }),
  });
  stack = await openStorageStack(config, () => holder.current, metrics, {
    probe: config.advanced.boot_backend_probe,
    now: clock.now,
  });
  // One counter over whatever stack is in use: a rebuilt stack (backends changed) holds the same
  // buckets, so the counters carry over.
  const usageSource = usageScanSource(() => stack!);
  const usage = new UsageCounter(usageSource.list, {
    baselineSize: usageSource.baselineSize,
    onScan: (trigger, outcome, seconds) => {
      metrics.usage.scans.inc({ trigger, outcome });
      metrics.usage.scanDuration.observe(seconds);
    },
  });
  const admission = admissionChainSource(() => holder.current);
  admission(); // built now: its warnings (a bucket made entirely public) show at startup
  const semaphore = new Semaphore(config.advanced.max_concurrent_requests);
  // Each observer's registrations; an old stack keeps its own (writes in flight on it during a
  // swap are still observed).
  const observers = new Map<WriteObserver, (() => void)[]>();
  observers.set(usage, [stack.objects.observers.add(usage)]);
  // Background archive conversions: they change stored bytes only (usage.ts), send no event, and
  // wait while a maintenance job holds their bucket (its drain waits for one in progress).
  const startConversions = (on: StorageStack) =>
    on.delta.startConversions({
      converted: (bucket, stored, source) => {
        if (usage.tracks(bucket)) usage.committed(bucket, stored, source);
      },
      admit: (bucket) =>
        maintenanceGate.holder(bucket) !== undefined || maintenanceGate.fenced(bucket) !== undefined
          ? null
          : maintenanceGate.enter(bucket),
    });
  await startConversions(stack);
  return {
    config: holder,
    clock,
    get storage() {
      return stack!;
    },
    replaceStorage(next) {
      const old = stack!;
      stack = next;
      startConversions(next).catch((err) =>
        log.error("Background archive conversions did not start", { error: String(err) })
      );
      for (const [observer, registrations] of observers) {
        registrations.push(next.objects.observers.add(observer));
      }
      return old;
    },
    addWriteObserver(observer) {
      observers.set(observer, [stack!.objects.observers.add(observer)]);
      return () => {
        for (const unregister of observers.get(observer) ?? []) unregister();
        observers.delete(observer);
      };
    },
    metrics,
    logging,
    admission,
    semaphore,
    maintenanceGate,
    usage,
    stop() {
      stack!.stop();
    },
  };
}
