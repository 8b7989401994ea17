/**
 * The listener: svc's own accept loop (http/connection-server.ts) serving the app composed from
 * the services container. `stop()` ends the listener and the services.
 */
import { createApp } from "./app.ts";
import { parseListenAddress } from "../config/mod.ts";
import {
  type ConnectionStats,
  loadTlsMaterial,
  permissiveCors,
  serveConnections,
  splitRawUrl,
} from "../http/mod.ts";
import { accessLogTarget, getLogger, noteAccess, openAccessLog } from "../observability/mod.ts";
import { withAccessLog } from "./access-log/access-logging.ts";
import { createSlotWaitCheck, readyResponse, withCheck } from "./readiness.ts";
import { nativeComplete, nativeReport, raiseOpenFileLimit } from "../native/mod.ts";
import type { AdminPlane } from "./admin-plane/admin-plane.ts";
import { errorResponse, type S3Handler } from "../s3/mod.ts";
import type { Svc } from "./open-svc.ts";
import { SvcError } from "../lib/mod.ts";
import { shutdownArchiveWorkers } from "../delta/mod.ts";
import { stopFrameDecoder } from "../storage/mod.ts";

const log = getLogger("svc::runtime");

export interface RunningServer {
  hostname: string;
  port: number;
  stop(): Promise<void>;
  finished: Promise<void>;
  /** Client connections (null when the runtime gives no per-connection control). */
  connections(): ConnectionStats | null;
}

/** The S3 handler, answering 503 while the admin plane says S3 must not serve. */
function gatedS3(s3: S3Handler, admin: AdminPlane) {
  return (request: Request, remoteAddress?: string): Promise<Response> => {
    const reason = admin.s3Unavailable();
    if (reason === null) return s3(request, remoteAddress);
    const { path } = splitRawUrl(request.url);
    const requestId = crypto.randomUUID();
    noteAccess(request, { requestId });
    return Promise.resolve(
      errorResponse(new SvcError("ServiceUnavailable", reason), path, requestId),
    );
  };
}

export async function startServer(svc: Svc): Promise<RunningServer> {
  const { services, admin } = svc;
  const holder = services.config;
  const config = holder.current;
  // Requests queued for a slot too long mean the instance cannot serve: leave the balancer.
  const slotWait = createSlotWaitCheck(
    services.semaphore,
    () => holder.current.advanced.ready_max_slot_wait_secs,
  );
  const metrics = services.metrics;
  const app = createApp({
    // Bound at startup (apply.ts RESTART_ONLY), like the listener.
    s3: config.advanced.cors_permissive
      ? permissiveCors(gatedS3(svc.surface.s3, admin))
      : gatedS3(svc.surface.s3, admin),
    ready: async () => {
      const [storage, db] = await Promise.all([
        services.storage.readiness.check(),
        admin.readiness(),
      ]);
      return readyResponse(
        withCheck(withCheck(storage, "config_db", db), slotWait.name, slotWait.run()),
      );
    },
    admin: { api: admin.api, operator: admin.operator },
    metrics: {
      observeRequest: (sample) => metrics.observeRequest(sample),
      observeAdminRequest: (sample) => metrics.observeAdminRequest(sample),
      // Uploads in flight are counted from the store at scrape time: always true, no bookkeeping.
      render: async () => {
        const stack = services.storage;
        metrics.multipart.inflight.set(await stack.store.count());
        metrics.multipart.inflightBytes.set(await stack.multipart.inflightBytes());
        stack.delta.refreshGauges();
        return await metrics.render();
      },
    },
  });

  // SVC_ACCESS_LOG is read once, at start: off, stderr or a file reopened on SIGHUP.
  const accessTarget = accessLogTarget(Deno.env.get("SVC_ACCESS_LOG"));
  const accessLog = accessTarget === null ? null : await openAccessLog(accessTarget);
  const reopenAccessLog = () => void accessLog?.reopen();
  if (accessLog !== null) Deno.addSignalListener("SIGHUP", reopenAccessLog);
  const fetchApp = async (request: Request, info: Deno.ServeHandlerInfo) =>
    await app.fetch(request, info);
  const handler = accessLog === null
    ? fetchApp
    : withAccessLog(fetchApp, accessLog, () => holder.current.advanced.trust_proxy_headers);

  const { hostname, port } = parseListenAddress(config.advanced.listen_addr);
  const fdLimit = raiseOpenFileLimit();
  // Half the descriptors at most go to client connections: the rest is for object files,
  // spools, backend sockets and xdelta3 pipes.
  const fdCap = fdLimit === null ? Infinity : Math.max(16, Math.floor(fdLimit.soft / 2));
  const tls = await loadTlsMaterial(config.advanced.tls, services.storage.stateDir, hostname);
  const server = await serveConnections({
    hostname,
    port,
    tls: tls === null ? undefined : { cert: tls.cert, key: tls.key },
    handler,
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
  if (tls !== null) {
    log.info(
      `TLS certificate ${tls.origin === "configured" ? "from" : "generated into"} ` +
        `${tls.certPath}`,
      { sha256_fingerprint: tls.fingerprint, origin: tls.origin },
    );
  }
  if (config.advanced.cors_permissive) {
    log.warn(
      "cors_permissive is on: web pages of any origin may call the S3 API (development only)",
    );
  }
  const native = nativeReport();
  if (!nativeComplete(native)) {
    log.warn("svc runs without some native code and takes its slower fallbacks", { ...native });
  }
  const scheme = tls === null ? "http" : "https";
  log.info(`svc listening on ${scheme}://${addr.hostname}:${addr.port}`, {
    state_dir: services.storage.stateDir,
    open_files_limit: fdLimit?.soft ?? "unknown",
    max_connections: Math.min(config.advanced.max_connections, fdCap),
    libc: native.libc,
    libcrypto: native.libcrypto,
  });
  return {
    hostname: addr.hostname,
    port: addr.port,
    finished: server.finished,
    connections: () => server.stats(),
    async stop() {
      services.stop();
      await server.shutdown();
      await admin.close();
      shutdownArchiveWorkers(); // idle archive workers would outlive the server
      stopFrameDecoder(); // so would the storage layer's frame decoder
      if (accessLog !== null) {
        Deno.removeSignalListener("SIGHUP", reopenAccessLog);
        await accessLog.close();
      }
    },
  };
}
