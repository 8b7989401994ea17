/**
 * The Prometheus metrics of `GET /_/metrics` (SPEC "Metrics"), on a registry of svc's own (never
 * prom-client's global one). Every metric of the table is registered from startup, so dashboards
 * find each name even before the component that feeds it exists; components get typed handles.
 *
 * Decisions:
 * - Label sets are bounded by construction: `method` is one of GET, PUT, HEAD, DELETE, POST and
 *   `operation` one of the 15 documented values. A request outside them (another method, an S3
 *   request with no operation label such as `PUT /`, an operator route other than health, stats
 *   and metrics) is not measured at all, in none of the four HTTP metrics, so their counts agree.
 *   No input of `observeRequest` carries a bucket name or an object key.
 * - Body-size buckets are binary multiples (1 KiB = 1024 ... 100 MiB = 104857600): S3 clients cut
 *   parts and chunks in powers of two, so a 1 MiB or 8 MiB body lands on a bucket boundary.
 * - A HEAD response sends no body: its response size is observed as 0 whatever Content-Length
 *   says. An unknown size (`undefined`) is not observed.
 * - Duration is up to the response headers; a streamed body is not included.
 * - Auth counters are read from `authStats()` at scrape time and always show all five series
 *   (zero while SigV4 is disabled or before the first request).
 * - The cache ratios are derived at scrape time from the cache handles: utilization =
 *   size/max (0 when max is 0), miss rate = misses/(hits+misses) (0 before the first lookup).
 * - `svc_codec_semaphore_available` has no sample until a codec supplies `codecSlots` (a 0 would
 *   read as "every slot busy"); the HELP and TYPE lines are always there.
 * - prom-client's `collectDefaultMetrics` is not used: under Deno it reports nodejs_* series with
 *   nonsense values (event-loop lag min 9.2e9 s, mean NaN, a Node version Deno only emulates).
 *   The standard process_* series are read from /proc/self on Linux instead; elsewhere only
 *   process_start_time_seconds and process_peak_rss_bytes exist. No svc_tokio_* series.
 */
import process from "node:process";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { AuthStats } from "../auth/authenticator.ts";
import type { OperationLabel } from "../s3/routes/router.ts";
import type { EventMetrics } from "../events/event-metrics.ts";

export type RequestOperation = OperationLabel | "health" | "stats" | "metrics";
export type DeltaDecision = "delta" | "passthrough" | "reference";
/** Why (a small fixed set of the delta store's, see DecisionReason in delta/delta-read.ts). */
export type DeltaDecisionReason = string;
type CacheGauge = "sizeBytes" | "entries" | "maxBytes";

export interface RequestSample {
  method: string;
  status: number;
  /** undefined: the request has no documented operation and is not measured. */
  operation: RequestOperation | undefined;
  /** Until the response headers were ready. */
  seconds: number;
  /** Request body bytes; undefined when unknown (not observed). */
  requestBytes?: number;
  /** Response body bytes; undefined when unknown (not observed). HEAD always counts 0. */
  responseBytes?: number;
}

export type ConfigSyncOutcome = "published" | "adopted" | "conflict" | "failed";

export interface MetricsOptions {
  version: string;
  /** `filesystem` or `s3`. */
  backendType: string;
  authStats: () => AuthStats;
  /** Free codec slots right now; without it the codec gauge has no sample. */
  codecSlots?: () => number;
}

/** Handles a component holds; `L` is a bounded label set. */
export type CounterHandle = { inc(value?: number): void };
export type LabelledCounterHandle<L> = { inc(labels: L, value?: number): void };
export type GaugeHandle = {
  set(value: number): void;
  inc(value?: number): void;
  dec(value?: number): void;
};
/** `startTimer()` returns a function that observes the elapsed seconds and returns them. */
export type HistogramHandle = { observe(value: number): void; startTimer(): () => number };
export type LabelledHistogramHandle<L> = { observe(labels: L, value: number): void };

export interface Metrics {
  /** Counts one finished request; false when it was outside the bounded label sets. */
  observeRequest(sample: RequestSample): boolean;
  /** Counts one finished admin-plane request (`/_/api/…`, `/_/stats`) by area and status. */
  observeAdminRequest(sample: { method: string; path: string; status: number }): void;
  /** The exposition for `GET /_/metrics` (text format 0.0.4). */
  render(): Promise<{ body: string; contentType: string }>;
  delta: {
    compressionRatio: HistogramHandle;
    bytesSaved: CounterHandle;
    encodeDuration: HistogramHandle;
    decodeDuration: HistogramHandle;
    decisions: LabelledCounterHandle<{ decision: DeltaDecision; reason: DeltaDecisionReason }>;
  };
  /** The two cache ratios are derived from these at scrape time. */
  cache: { hits: CounterHandle; misses: CounterHandle } & Record<CacheGauge, GaugeHandle>;
  multipart: { inflight: GaugeHandle; inflightBytes: GaugeHandle };
  /** `reason`: one of DecryptFailure (storage/encryption/encryption-error.ts), a fixed set. */
  encryption: { decryptFailures: LabelledCounterHandle<{ reason: string }> };
  /** `phase` and `state` must come from small fixed sets of constants of the sweeper. */
  sweep: {
    runs: LabelledCounterHandle<{ phase: string }>;
    duration: LabelledHistogramHandle<{ phase: string }>;
    sweptUploads: LabelledCounterHandle<{ state: string }>;
    reclaimedBytes: CounterHandle;
    orphanRelayDirs: CounterHandle;
    orphanRelayFiles: CounterHandle;
    lastUploadsReclaimed: GaugeHandle;
    lastReclaimedBytes: GaugeHandle;
  };
  replication: { listCalls: CounterHandle; headCalls: CounterHandle; dirsCompleted: CounterHandle };
  iam: {
    /** IAM decisions on S3 requests (the bootstrap key and open access are not counted). */
    decisions: LabelledCounterHandle<{ decision: "allow" | "deny"; reason: IamDecisionReason }>;
    rebuilds: CounterHandle;
    rebuildDuration: HistogramHandle;
    /** Where the users/version gauges read from (set once IAM is attached). */
    attach(source: () => { users: number; version: number }): void;
    /** Config sync steps (db/config-sync.ts) by outcome. */
    syncs: LabelledCounterHandle<{ outcome: ConfigSyncOutcome }>;
    /** OIDC logins (admin/oauth-routes.ts): `ok`, or the refusal reason (a fixed set). */
    oauthLogins: LabelledCounterHandle<{ outcome: string }>;
  };
  /** `kind`, `status` and `type` come from the fixed sets of src/jobs/job-model.ts. */
  jobs: {
    count: { set(labels: { kind: string; status: string }, value: number): void };
    objects: LabelledCounterHandle<{ type: string; outcome: "done" | "failed" }>;
    bytes: LabelledCounterHandle<{ type: string }>;
  };
  /** The event outbox and its dispatcher (src/events/event-metrics.ts lists them). */
  events: EventMetrics;
  /**
   * Lifecycle runs (jobs/lifecycle/): `action` is `expire`, `transition` or `retain-newest`;
   * `outcome` is `done` or `failed`. Previews are not counted.
   */
  lifecycle: {
    objects: LabelledCounterHandle<{ action: string; outcome: "done" | "failed" }>;
    bytes: LabelledCounterHandle<{ action: string }>;
  };
  /**
   * Usage counters (src/objects/usage.ts): scans by trigger (`seed`, `scan`, `refresh`,
   * `savings`) and outcome, scan durations, and the batched counter writes by outcome.
   */
  usage: {
    scans: LabelledCounterHandle<{ trigger: string; outcome: "ok" | "error" }>;
    scanDuration: HistogramHandle;
    flushes: LabelledCounterHandle<{ outcome: "ok" | "error" }>;
  };
}

export type IamDecisionReason = "allow" | "explicit_deny" | "no_match" | "unknown_principal";

export const METHODS = ["GET", "PUT", "HEAD", "DELETE", "POST"] as const;
/** The 15 documented values; metrics_test.ts checks at type level that they cover OperationLabel. */
export const OPERATIONS = ("list_buckets head_root list_objects create_bucket delete_bucket " +
  "head_bucket post_bucket get_object put_object delete_object head_object post_object " +
  "health stats metrics").split(" ") as RequestOperation[];
const METHOD_NAMES = new Set<string>(METHODS);
const OPERATION_NAMES = new Set<string>(OPERATIONS);

/** Default Prometheus buckets, 5 ms to 10 s. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const KIB = 1024;
const MIB = 1024 * KIB;
export const SIZE_BUCKETS = [KIB, 10 * KIB, 100 * KIB, MIB, 10 * MIB, 100 * MIB];
const CODEC_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];
export const CODEC_BUCKETS = CODEC_MS.map((ms) => ms / 1000);
export const RATIO_BUCKETS = [0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/**
 * The bounded `area` label of an admin request: the first segment after `/_/api/admin/`, when it
 * is one svc serves, else `other` (a path a client made up never becomes a label value).
 */
const ADMIN_AREAS = new Set([
  "event-outbox",
  "login",
  "logout",
  "session",
  "password",
  "recover-db",
  "config",
  "backends",
  "buckets",
  "test-s3",
  "audit",
  "logs",
  "users",
  "groups",
  "iam",
  "policies",
  "jobs",
  "backup",
  "usage",
  "deltaspace",
  "objects",
]);

export function adminArea(path: string): string {
  if (path === "/_/api/whoami") return "whoami";
  if (path === "/_/stats" || path === "/_/stats/") return "stats";
  const match = /^\/_\/api\/admin\/([a-z0-9-]+)/.exec(path);
  return match && ADMIN_AREAS.has(match[1]) ? match[1] : "other";
}

const OPERATOR_ROUTES = new Map([["health", "health"], ["stats", "stats"], ["metrics", "metrics"]]);

/** The operation label of an operator route (`/_/health`, `/_/stats`, `/_/metrics`). */
export function operatorOperation(path: string): "health" | "stats" | "metrics" | undefined {
  const match = /^\/_\/([a-z]+)\/?$/.exec(path);
  return match ? OPERATOR_ROUTES.get(match[1]) as "health" | "stats" | "metrics" : undefined;
}

function declaredLength(headers: Headers): number | undefined {
  const value = headers.get("content-length");
  return value === null || !/^\d+$/.test(value.trim()) ? undefined : Number(value);
}

/** Request body bytes: Content-Length, 0 without a body, undefined when unknown. */
export function requestBytesOf(request: Request): number | undefined {
  return declaredLength(request.headers) ?? (request.body === null ? 0 : undefined);
}

/**
 * Response body bytes: 0 for HEAD, 204, 304 or a null body, else Content-Length; undefined only
 * for a stream sent without a length (svc sends none: every S3 answer with a body declares its
 * length, and app.ts sizes the operator answers).
 */
export function responseBytesOf(response: Response, method: string): number | undefined {
  if (method.toUpperCase() === "HEAD" || response.status === 204 || response.status === 304) {
    return 0;
  }
  const declared = declaredLength(response.headers);
  if (declared !== undefined) return declared;
  // Only reached without a Content-Length. Reading `body` turns a string body into a stream
  // (Deno then answers it chunked), which is why a declared length is checked first.
  return response.body === null ? 0 : undefined;
}

type ProcField = "rss" | "peakRss" | "virtual" | "threads" | "openFds" | "maxFds";
type ProcSnapshot = Partial<Record<ProcField, number>>;

/** Field `name` of /proc/self/status in bytes (values there are in kB). */
function statusBytes(status: string, name: string): number | undefined {
  const match = new RegExp(`^${name}:\\s+(\\d+)\\s*kB`, "m").exec(status);
  return match ? Number(match[1]) * 1024 : undefined;
}

async function readProc(): Promise<ProcSnapshot> {
  const snapshot: ProcSnapshot = {};
  const status = await Deno.readTextFile("/proc/self/status").catch(() => "");
  snapshot.rss = statusBytes(status, "VmRSS");
  snapshot.peakRss = statusBytes(status, "VmHWM");
  snapshot.virtual = statusBytes(status, "VmSize");
  const threads = /^Threads:\s+(\d+)/m.exec(status);
  if (threads) snapshot.threads = Number(threads[1]);
  try {
    let fds = 0;
    for await (const _ of Deno.readDir("/proc/self/fd")) fds++;
    snapshot.openFds = fds;
  } catch { /* no /proc: leave unset */ }
  const limits = await Deno.readTextFile("/proc/self/limits").catch(() => "");
  const maxFiles = /^Max open files\s+(\d+)/m.exec(limits);
  if (maxFiles) snapshot.maxFds = Number(maxFiles[1]);
  return snapshot;
}

/** A gauge read from `source` at scrape time, with no sample while there is no source. */
class SourcedGauge extends Gauge {
  readonly #source?: () => number;
  constructor(name: string, help: string, registers: Registry[], source?: () => number) {
    super({ name, help, registers });
    this.#source = source;
  }
  override async get() {
    const metric = await super.get();
    if (!this.#source) return { ...metric, values: [] };
    return { ...metric, values: [{ value: this.#source(), labels: {} }] };
  }
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registers = [new Registry()];
  const [registry] = registers;
  const linux = Deno.build.os === "linux";

  const counter = <L extends string = never>(name: string, help: string, labelNames: L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string = never>(name: string, help: string, labelNames: L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers });
  type Buckets = number[];
  const histogram = <L extends string = never>(n: string, h: string, b: Buckets, l: L[] = []) =>
    new Histogram<L>({ name: n, help: h, buckets: b, labelNames: l, registers });

  // Process and build.
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")
    .set(performance.timeOrigin / 1000);
  gauge("svc_build_info", "Build information; always 1.", ["version", "backend_type"])
    .set({ version: options.version, backend_type: options.backendType }, 1);
  const peakRss = gauge("process_peak_rss_bytes", "Peak resident set size in bytes.");
  const processGauges = linux
    ? {
      rss: gauge("process_resident_memory_bytes", "Resident memory size in bytes."),
      virtual: gauge("process_virtual_memory_bytes", "Virtual memory size in bytes."),
      openFds: gauge("process_open_fds", "Number of open file descriptors."),
      maxFds: gauge("process_max_fds", "Maximum number of open file descriptors."),
      threads: gauge("process_threads", "Number of OS threads in the process."),
    }
    : undefined;
  if (linux) {
    new Counter({
      name: "process_cpu_seconds_total",
      help: "Total user and system CPU time spent in seconds.",
      registers,
      collect() {
        const { user, system } = process.cpuUsage();
        this.reset();
        this.inc((user + system) / 1e6);
      },
    });
  }
  let peakSeen = 0;
  const refreshProcess = async () => {
    const proc = linux ? await readProc() : {};
    peakSeen = Math.max(peakSeen, proc.peakRss ?? 0, proc.rss ?? Deno.memoryUsage().rss);
    peakRss.set(peakSeen);
    if (!processGauges) return;
    for (const name of ["rss", "virtual", "openFds", "maxFds", "threads"] as const) {
      const value = proc[name];
      if (value !== undefined) processGauges[name].set(value);
    }
  };

  // HTTP.
  const M = ["method" as const];
  const requests = counter("svc_http_requests_total", "HTTP requests.", [
    ...M,
    "status",
    "operation",
  ]);
  const durationHelp = "Time to response headers.";
  const duration = histogram("svc_http_request_duration_seconds", durationHelp, DURATION_BUCKETS, [
    ...M,
    "operation",
  ]);
  const reqSize = histogram("svc_http_request_size_bytes", "Request body bytes.", SIZE_BUCKETS, M);
  const resSize = histogram(
    "svc_http_response_size_bytes",
    "Response body bytes.",
    SIZE_BUCKETS,
    M,
  );
  const observeRequest = (sample: RequestSample): boolean => {
    const method = sample.method.toUpperCase();
    const { operation, status } = sample;
    if (!METHOD_NAMES.has(method) || !OPERATION_NAMES.has(operation ?? "")) return false;
    if (!Number.isInteger(status) || status < 100 || status > 599) return false;
    requests.inc({ method, status: String(status), operation: operation! });
    const seconds = Number.isFinite(sample.seconds) ? Math.max(0, sample.seconds) : 0;
    duration.observe({ method, operation }, seconds);
    const size = (value: number | undefined) =>
      value !== undefined && Number.isFinite(value) && value >= 0;
    if (size(sample.requestBytes)) reqSize.observe({ method }, sample.requestBytes!);
    const responseBytes = method === "HEAD" ? 0 : sample.responseBytes;
    if (size(responseBytes)) resSize.observe({ method }, responseBytes!);
    return true;
  };

  const adminRequests = counter(
    "svc_admin_requests_total",
    "Admin-plane requests (/_/api, /_/stats) by area, method and status.",
    ["area", "method", "status"],
  );
  const observeAdminRequest = (sample: { method: string; path: string; status: number }) => {
    const method = sample.method.toUpperCase();
    if (!METHOD_NAMES.has(method) && method !== "PATCH") return;
    if (!Number.isInteger(sample.status) || sample.status < 100 || sample.status > 599) return;
    adminRequests.inc({ area: adminArea(sample.path), method, status: String(sample.status) });
  };

  // Delta compression.
  const delta = {
    compressionRatio: histogram("svc_delta_compression_ratio", "Delta/original.", RATIO_BUCKETS),
    bytesSaved: counter("svc_delta_bytes_saved_total", "Bytes saved by delta compression."),
    encodeDuration: histogram("svc_delta_encode_duration_seconds", "Encode time.", CODEC_BUCKETS),
    decodeDuration: histogram("svc_delta_decode_duration_seconds", "Decode time.", CODEC_BUCKETS),
    decisions: counter("svc_delta_decisions_total", "Storage decisions, with why.", [
      "decision",
      "reason",
    ]),
  };

  // Cache: the two ratios are derived at scrape time from what the cache feeds.
  const cache = {
    hits: counter("svc_cache_hits_total", "Cache hits."),
    misses: counter("svc_cache_misses_total", "Cache misses."),
    sizeBytes: gauge("svc_cache_size_bytes", "Bytes held by the cache."),
    entries: gauge("svc_cache_entries", "Entries held by the cache."),
    maxBytes: gauge("svc_cache_max_bytes", "Cache capacity in bytes."),
  };
  const valueOf = async (metric: Counter | Gauge) => (await metric.get()).values[0]?.value ?? 0;
  new Gauge({
    name: "svc_cache_utilization_ratio",
    help: "Cache size divided by capacity (0.0-1.0).",
    registers,
    async collect() {
      const [size, max] = [await valueOf(cache.sizeBytes), await valueOf(cache.maxBytes)];
      this.set(max > 0 ? Math.min(1, Math.max(0, size / max)) : 0);
    },
  });
  new Gauge({
    name: "svc_cache_miss_rate_ratio",
    help: "Cache misses divided by lookups since startup.",
    registers,
    async collect() {
      const [hits, misses] = [await valueOf(cache.hits), await valueOf(cache.misses)];
      this.set(hits + misses > 0 ? misses / (hits + misses) : 0);
    },
  });

  // Codec: no sample without a codec.
  new SourcedGauge(
    "svc_codec_semaphore_available",
    "Free codec slots (0 = all slots busy).",
    registers,
    options.codecSlots,
  );

  const multipart = {
    inflight: gauge("svc_multipart_uploads_inflight", "Uploads in progress."),
    inflightBytes: gauge(
      "svc_multipart_inflight_bytes",
      "Bytes uploads in progress hold (stored and arriving parts; max_total_multipart_bytes).",
    ),
  };
  const sweep = {
    runs: counter("svc_multipart_sweep_runs_total", "Sweeper runs.", ["phase"]),
    duration: histogram("svc_multipart_sweep_duration_seconds", "Sweep time.", DURATION_BUCKETS, [
      "phase",
    ]),
    sweptUploads: counter("svc_multipart_swept_uploads_total", "Uploads swept.", ["state"]),
    reclaimedBytes: counter("svc_multipart_sweep_reclaimed_bytes_total", "Bytes reclaimed."),
    orphanRelayDirs: counter("svc_multipart_sweep_orphan_relay_dirs_total", "Orphan relay dirs."),
    orphanRelayFiles: counter("svc_multipart_sweep_orphan_relay_files_total", "Orphan files."),
    lastUploadsReclaimed: gauge("svc_multipart_sweep_last_uploads_reclaimed", "Uploads, last run."),
    lastReclaimedBytes: gauge("svc_multipart_sweep_last_reclaimed_bytes", "Bytes, last run."),
  };

  // Auth: read from the authenticator at scrape time; every label value always present.
  const scraped = <L extends string>(name: string, help: string, label: L, read: () => object) =>
    new Counter<L>({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        this.reset();
        for (const [value, n] of Object.entries(read())) this.inc({ [label]: value } as never, n);
      },
    });
  const auth = () => options.authStats();
  scraped(
    "svc_auth_attempts_total",
    "SigV4 authentication attempts.",
    "result",
    () => auth().attempts,
  );
  scraped(
    "svc_auth_failures_total",
    "SigV4 authentication failures.",
    "reason",
    () => auth().failures,
  );

  const encryption = {
    decryptFailures: counter(
      "svc_encryption_decrypt_failures_total",
      "Encrypted objects that could not be read (auth, truncated, header, key-mismatch).",
      ["reason"],
    ),
  };

  const replication = {
    listCalls: counter("svc_replication_list_calls_total", "Replication list calls."),
    headCalls: counter("svc_replication_head_calls_total", "Replication head calls."),
    dirsCompleted: counter("svc_replication_dirs_completed_total", "Directories replicated."),
  };

  let iamSource: (() => { users: number; version: number }) | undefined;
  new SourcedGauge(
    "svc_iam_users",
    "IAM users in the index in effect.",
    registers,
    () => iamSource?.().users ?? 0,
  );
  new SourcedGauge(
    "svc_iam_index_version",
    "The IAM version the index in effect was built from.",
    registers,
    () => iamSource?.().version ?? 0,
  );
  const iam = {
    decisions: counter("svc_iam_decisions_total", "IAM decisions on S3 requests.", [
      "decision",
      "reason",
    ]),
    rebuilds: counter("svc_iam_index_rebuilds_total", "IAM index rebuilds."),
    oauthLogins: counter(
      "svc_oauth_logins_total",
      "OIDC logins by outcome (ok, or why one was refused).",
      ["outcome"],
    ),
    syncs: counter(
      "svc_config_sync_total",
      "Config sync steps: IAM published, adopted, lost to a conflict, or failed.",
      ["outcome"],
    ),
    rebuildDuration: histogram(
      "svc_iam_index_rebuild_seconds",
      "Time to rebuild the IAM index.",
      DURATION_BUCKETS,
    ),
    attach(source: () => { users: number; version: number }) {
      iamSource = source;
    },
  };

  const jobs = {
    count: gauge("svc_jobs", "Jobs by kind and status.", ["kind", "status"]),
    objects: counter(
      "svc_job_objects_total",
      "Objects processed by maintenance jobs (re-encrypt, migrate), by outcome.",
      ["type", "outcome"],
    ),
    bytes: counter("svc_job_bytes_total", "Bytes copied by maintenance jobs.", ["type"]),
  };

  const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
  const events: EventMetrics = {
    appended: counter("svc_events_appended_total", "Events buffered by the outbox writer."),
    committed: counter("svc_events_committed_total", "Events committed to the outbox."),
    dropped: counter("svc_events_dropped_total", "Events lost: outbox buffer full or closed."),
    commitFailures: counter("svc_events_commit_failures_total", "Failed outbox batch commits."),
    commitLag: histogram(
      "svc_events_commit_lag_seconds",
      "From an event's append to its commit in the outbox.",
      LAG_BUCKETS,
    ),
    depth: gauge("svc_event_outbox_rows", "Outbox rows per status.", ["status"]),
    deliveries: counter("svc_event_deliveries_total", "Outbox row delivery outcomes.", ["result"]),
    requests: counter("svc_event_delivery_requests_total", "Requests to event endpoints.", [
      "result",
    ]),
    requestDuration: histogram(
      "svc_event_delivery_duration_seconds",
      "One request to an event endpoint, until its answer.",
      DURATION_BUCKETS,
    ),
  };

  const lifecycle = {
    objects: counter(
      "svc_lifecycle_objects_total",
      "Objects lifecycle rules expired or transitioned, by action and outcome.",
      ["action", "outcome"],
    ),
    bytes: counter(
      "svc_lifecycle_bytes_total",
      "Logical bytes lifecycle rules expired or transitioned, by action.",
      ["action"],
    ),
  };
  const usage = {
    scans: counter("svc_usage_scans_total", "Usage counter scans, by trigger and outcome.", [
      "trigger",
      "outcome",
    ]),
    scanDuration: histogram(
      "svc_usage_scan_seconds",
      "Time to scan one bucket for its usage counter or deltaspace savings.",
      [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 1800],
    ),
    flushes: counter("svc_usage_flushes_total", "Batched usage counter writes, by outcome.", [
      "outcome",
    ]),
  };

  return {
    observeRequest,
    observeAdminRequest,
    async render() {
      await refreshProcess();
      return { body: await registry.metrics(), contentType: registry.contentType };
    },
    delta,
    cache,
    multipart,
    encryption,
    sweep,
    replication,
    iam,
    jobs,
    events,
    lifecycle,
    usage,
  };
}
