/**
 * Builds the running service from one config snapshot: backend, object and multipart services,
 * the S3 handler, background tasks, and the listener. `stop()` ends all of them.
 */
import { createApp } from "../app.ts";
import { admissionChainSource } from "../admission/build.ts";
import { Authenticator } from "../auth/authenticator.ts";
import { BootstrapCredentials, type CredentialStore } from "../auth/credentials.ts";
import type { Config } from "../config/schema.ts";
import { parseListenAddress } from "../config/load.ts";
import { type ConnectionStats, serveConnections } from "../http/connection-server.ts";
import { Semaphore } from "../http/semaphore.ts";
import { activeLogging, getLogger } from "../observability/log.ts";
import { createMetrics } from "../observability/metrics.ts";
import { VERSION } from "../version.ts";
import { createS3Handler } from "../s3/handler.ts";
import { bucketPolicySource } from "../s3/bucket-policy.ts";
import { usageCounterOf } from "../objects/usage.ts";
import { createSlotWaitCheck, readyResponse, withCheck } from "../observability/readiness.ts";
import { type ApplyResult, planApply } from "./apply.ts";
import { checkStartupAuth } from "./startup-checks.ts";
import { raiseOpenFileLimit } from "./fd-limit.ts";
import { backendPlanOf } from "./backends.ts";
import { checkRemovedBackends, needsRebuild, openStorageStack } from "./storage-stack.ts";

const log = getLogger("svc::runtime");

export interface RunningServer {
  hostname: string;
  port: number;
  /** Applies an already validated config; restart-only settings wait (see apply.ts). */
  apply(next: Config): Promise<ApplyResult>;
  stop(): Promise<void>;
  finished: Promise<void>;
  /** Client connections (null when the runtime gives no per-connection control). */
  connections(): ConnectionStats | null;
}

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

function defaultBackendType(config: Config): string {
  const plan = backendPlanOf(config);
  return plan.specs.find((spec) => spec.name === plan.defaultName)?.type ?? "filesystem";
}

export async function startServer(config: Config): Promise<RunningServer> {
  for (const warning of checkStartupAuth(config.access)) log.warn(warning);
  const holder = new ConfigHolder(config);
  // One credential store per config snapshot, rebuilt when a reload swaps the snapshot.
  let keys: { config: Config; store: CredentialStore } | undefined;
  const credentials = () => {
    const config = holder.current;
    if (keys?.config !== config) {
      const { access_key_id, secret_access_key } = config.access;
      keys = { config, store: new BootstrapCredentials(access_key_id, secret_access_key) };
    }
    return keys.store;
  };
  const authenticator = new Authenticator(credentials, () => {
    const { access, advanced } = holder.current;
    return {
      open: access.authentication?.trim().toLowerCase() === "none",
      clockSkewSeconds: advanced.clock_skew_seconds,
      replayWindowSeconds: advanced.replay_window_secs,
      trustProxyHeaders: advanced.trust_proxy_headers,
      lockout: {
        maxAttempts: advanced.rate_limit_max_attempts,
        windowSeconds: advanced.rate_limit_window_secs,
        lockoutSeconds: advanced.rate_limit_lockout_secs,
      },
    };
  }, (event, fields) => activeLogging().auditRing.record(event, fields));
  const metrics = createMetrics({
    version: VERSION,
    backendType: defaultBackendType(config),
    authStats: () => authenticator.stats,
    codecSlots: () => stack.delta.pool.available,
  });
  let stack = await openStorageStack(config, () => holder.current, metrics, {
    probe: config.advanced.boot_backend_probe,
  });
  const admission = admissionChainSource(() => holder.current);
  admission(); // built now: its warnings (a bucket made entirely public) show at startup
  const semaphore = new Semaphore(config.advanced.max_concurrent_requests);
  const s3 = createS3Handler({
    authenticator,
    onComplete: (sample) => metrics.observeRequest(sample),
    // Read per request: a reload that moves the data directory swaps the whole stack.
    services: {
      get objects() {
        return stack.objects;
      },
      get multipart() {
        return stack.multipart;
      },
      credentials,
      admission,
      bucketPolicy: bucketPolicySource(() => holder.current),
      // Counters belong to the object service: a rebuilt stack starts with fresh ones.
      get usage() {
        return usageCounterOf(stack.objects);
      },
    },
    semaphore,
    requestTimeoutMs: () => holder.current.advanced.request_timeout_secs * 1000,
    bodyStallMs: () => holder.current.advanced.body_stall_timeout_secs * 1000,
    formFieldsMs: () => holder.current.advanced.header_timeout_secs * 1000,
    debugHeaders: () => holder.current.advanced.debug_headers,
  });
  // Requests queued for a slot too long mean the instance cannot serve: leave the balancer.
  const slotWait = createSlotWaitCheck(
    semaphore,
    () => holder.current.advanced.ready_max_slot_wait_secs,
  );
  const app = createApp({
    s3,
    ready: async () =>
      readyResponse(withCheck(await stack.readiness.check(), slotWait.name, slotWait.run())),
    metrics: {
      observeRequest: (sample) => metrics.observeRequest(sample),
      // Uploads in flight are counted from the store at scrape time: always true, no bookkeeping.
      render: async () => {
        metrics.multipart.inflight.set(await stack.store.count());
        stack.delta.refreshGauges();
        return await metrics.render();
      },
    },
  });

  const { hostname, port } = parseListenAddress(config.advanced.listen_addr);
  const fdLimit = raiseOpenFileLimit();
  // Half the descriptors at most go to client connections: the rest is for object files,
  // spools, backend sockets and xdelta3 pipes.
  const fdCap = fdLimit === null ? Infinity : Math.max(16, Math.floor(fdLimit.soft / 2));
  const server = await serveConnections({
    hostname,
    port,
    handler: async (request, info) => await app.fetch(request, info),
    limits: () => {
      const advanced = holder.current.advanced;
      return {
        maxConnections: Math.min(advanced.max_connections, fdCap),
        headerTimeoutMs: advanced.header_timeout_secs * 1000,
        idleTimeoutMs: advanced.idle_timeout_secs * 1000,
      };
    },
  });
  const addr = server.addr;
  log.info(`svc listening on http://${addr.hostname}:${addr.port}`, {
    state_dir: stack.stateDir,
    open_files_limit: fdLimit?.soft ?? "unknown",
    max_connections: Math.min(config.advanced.max_connections, fdCap),
  });
  return {
    hostname: addr.hostname,
    port: addr.port,
    finished: server.finished,
    connections: () => server.stats(),
    async apply(next) {
      // Refuse before any change: the new config must not leave the server open by accident.
      checkStartupAuth(next.access);
      const { snapshot, result } = planApply(holder.current, next);
      if (needsRebuild(stack, snapshot)) {
        // Opened before the swap: backends that fail to open (no xattrs, no access, a backend
        // removed while in use) change nothing.
        await checkRemovedBackends(stack, snapshot);
        const fresh = await openStorageStack(snapshot, () => holder.current, metrics, {
          probe: snapshot.advanced.boot_backend_probe === "off" ? "off" : "warn",
        });
        const old = stack;
        holder.swap(snapshot);
        stack = fresh;
        old.stop();
        admission();
        log.info("storage rebuilt for the new backend settings", {
          backends: [...fresh.backends.keys()].join(","),
          state_dir: fresh.stateDir,
        });
      } else {
        holder.swap(snapshot);
        admission(); // rebuilt now, so its warnings belong to this reload
      }
      return result;
    },
    async stop() {
      stack.stop();
      await server.shutdown();
    },
  };
}
