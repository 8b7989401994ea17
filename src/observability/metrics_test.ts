import assert from "node:assert/strict";
import { register as globalRegistry } from "prom-client";
import type { AuthStats } from "../auth/authenticator.ts";
import { adminArea } from "./metrics/admin-request-metrics.ts";
import { OPERATIONS } from "./metrics/http-metrics.ts";
import {
  createMetrics,
  type Metrics,
  operatorOperation,
  requestBytesOf,
  type RequestOperation,
  type RequestSample,
  responseBytesOf,
} from "./metrics.ts";
import { promtool } from "../../tests/helpers/promtool.ts";

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the text exposition strictly: any line it does not understand fails the test. */
export function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const type = /^# TYPE ([a-zA-Z_:][\w:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      assert.ok(!types.has(type[1]), `TYPE ${type[1]} repeated`);
      types.set(type[1], type[2]);
      continue;
    }
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    const pairs = [...(m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)];
    assert.equal(pairs.map((p) => p[0]).join(","), m[2] ?? "", `bad labels: ${line}`);
    for (const [, name, value] of pairs) labels[name] = value.replace(/\\(.)/g, "$1");
    const value = m[3] === "+Inf" ? Infinity : m[3] === "-Inf" ? -Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value), `NaN in ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples };
}

const zeroStats = (): AuthStats => ({
  attempts: { success: 0, failure: 0 },
  failures: { missing_header: 0, invalid_presigned: 0, invalid_signature: 0 },
});

function make(overrides: Partial<Parameters<typeof createMetrics>[0]> = {}): Metrics {
  return createMetrics({
    version: "9.9.9",
    backendType: "filesystem",
    authStats: zeroStats,
    ...overrides,
  });
}

async function scrape(metrics: Metrics) {
  return parseExposition((await metrics.render()).body);
}

/** Samples of `name` with their labels (minus `le`) and values, sorted for deepEqual. */
function series(samples: Sample[], name: string): Array<[string, number]> {
  return samples.filter((s) => s.name === name)
    .map((s): [string, number] => [JSON.stringify(s.labels), s.value])
    .sort(([a], [b]) => a.localeCompare(b));
}

const key = (labels: Record<string, string>) => JSON.stringify(labels);

const base = { seconds: 0.001 };
const SEQUENCE: RequestSample[] = [
  { ...base, method: "GET", status: 200, operation: "get_object", responseBytes: 5000 },
  { ...base, method: "GET", status: 200, operation: "get_object", requestBytes: 0 },
  { ...base, method: "get", status: 200, operation: "get_object", seconds: 0.3 },
  { ...base, method: "PUT", status: 200, operation: "put_object", requestBytes: 2048 },
  { ...base, method: "HEAD", status: 404, operation: "head_object", responseBytes: 1234 },
  { ...base, method: "GET", status: 200, operation: "metrics" },
  // Outside the bounded label sets: none of these may leave a trace.
  { ...base, method: "OPTIONS", status: 200, operation: "get_object" },
  { ...base, method: "PATCH", status: 200, operation: "put_object" },
  { ...base, method: "PUT", status: 405, operation: undefined },
  { ...base, method: "GET", status: 0, operation: "get_object" },
  { ...base, method: "GET", status: 200, operation: "no_such_op" as RequestOperation },
];

Deno.test("observeRequest counts exact label sets and skips anything unbounded", async () => {
  const metrics = make();
  const recorded = SEQUENCE.map((sample) => metrics.observeRequest(sample));
  assert.deepEqual(recorded, [
    true,
    true,
    true,
    true,
    true,
    true,
    false,
    false,
    false,
    false,
    false,
  ]);
  const { samples } = await scrape(metrics);
  assert.deepEqual(
    series(samples, "svc_http_requests_total"),
    [
      [key({ method: "GET", status: "200", operation: "get_object" }), 3],
      [key({ method: "GET", status: "200", operation: "metrics" }), 1],
      [key({ method: "HEAD", status: "404", operation: "head_object" }), 1],
      [key({ method: "PUT", status: "200", operation: "put_object" }), 1],
    ].sort(([a], [b]) => String(a).localeCompare(String(b))),
  );
  assert.deepEqual(series(samples, "svc_http_request_duration_seconds_count"), [
    [key({ method: "GET", operation: "get_object" }), 3],
    [key({ method: "GET", operation: "metrics" }), 1],
    [key({ method: "HEAD", operation: "head_object" }), 1],
    [key({ method: "PUT", operation: "put_object" }), 1],
  ]);
  const getBuckets = samples.filter((s) =>
    s.name === "svc_http_request_duration_seconds_bucket" && s.labels.operation === "get_object"
  );
  assert.equal(getBuckets.find((s) => s.labels.le === "0.25")?.value, 2);
  assert.equal(getBuckets.find((s) => s.labels.le === "0.5")?.value, 3);
  // Request sizes: GET 0 and PUT 2048 were given; HEAD's response always counts 0 bytes.
  assert.deepEqual(series(samples, "svc_http_request_size_bytes_sum"), [
    [key({ method: "GET" }), 0],
    [key({ method: "PUT" }), 2048],
  ]);
  assert.deepEqual(series(samples, "svc_http_response_size_bytes_sum"), [
    [key({ method: "GET" }), 5000],
    [key({ method: "HEAD" }), 0],
  ]);
  const putSize = samples.filter((s) =>
    s.name === "svc_http_request_size_bytes_bucket" && s.labels.method === "PUT"
  );
  assert.deepEqual(putSize.map((s) => s.value), [0, 1, 1, 1, 1, 1, 1]);
});

Deno.test("label values stay in the bounded sets; bucket names and keys never appear", async () => {
  const metrics = make();
  for (const sample of SEQUENCE) {
    // Extra fields a careless caller might pass are ignored: the API has no input for them.
    metrics.observeRequest({ ...sample, bucket: "secret-bucket", key: "secret/key" } as never);
  }
  const { body } = await metrics.render();
  assert.ok(!body.includes("secret"));
  const { samples } = parseExposition(body);
  const allowed: Record<string, (v: string) => boolean> = {
    method: (v) => ["GET", "PUT", "HEAD", "DELETE", "POST"].includes(v),
    operation: (v) => (OPERATIONS as string[]).includes(v),
    status: (v) => /^[1-5]\d\d$/.test(v),
  };
  for (const s of samples.filter((s) => s.name.startsWith("svc_http_"))) {
    for (const [label, value] of Object.entries(s.labels)) {
      if (label !== "le") assert.ok(allowed[label]?.(value), `${s.name} ${label}=${value}`);
    }
  }
});

Deno.test("the 15 operation values are the documented ones", () => {
  // Type-level: a missing or extra RequestOperation fails `deno check` here.
  const all: Record<RequestOperation, true> = {
    list_buckets: true,
    head_root: true,
    list_objects: true,
    create_bucket: true,
    delete_bucket: true,
    head_bucket: true,
    post_bucket: true,
    get_object: true,
    put_object: true,
    delete_object: true,
    head_object: true,
    post_object: true,
    health: true,
    stats: true,
    metrics: true,
  };
  assert.deepEqual(OPERATIONS, Object.keys(all));
  assert.equal(OPERATIONS.length, 15);
});

const DEFAULT = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"];
const SIZES = ["1024", "10240", "102400", "1048576", "10485760", "104857600"];
const CODEC = ["0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5"];
const RATIO = ["0.01", "0.05", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8"];

Deno.test("histogram buckets are exactly the documented ones", async () => {
  const metrics = make();
  metrics.observeRequest({ ...SEQUENCE[3], responseBytes: 10 });
  metrics.sweep.duration.observe({ phase: "uploads" }, 1);
  const { samples } = await scrape(metrics);
  const les = (name: string) =>
    samples.filter((s) => s.name === `${name}_bucket`).map((s) => s.labels.le);
  assert.deepEqual(les("svc_http_request_duration_seconds"), [...DEFAULT, "+Inf"]);
  assert.deepEqual(les("svc_http_request_size_bytes"), [...SIZES, "+Inf"]);
  assert.deepEqual(les("svc_http_response_size_bytes"), [...SIZES, "+Inf"]);
  assert.deepEqual(les("svc_delta_encode_duration_seconds"), [...CODEC, "5", "10", "30", "+Inf"]);
  assert.deepEqual(les("svc_delta_decode_duration_seconds"), [...CODEC, "5", "10", "30", "+Inf"]);
  assert.deepEqual(les("svc_delta_compression_ratio"), [...RATIO, "0.9", "1", "+Inf"]);
  assert.deepEqual(les("svc_multipart_sweep_duration_seconds"), [...DEFAULT, "+Inf"]);
});

/** SPEC table: name → [type, labels]. */
const TABLE: Record<string, [string, string[]]> = {
  process_start_time_seconds: ["gauge", []],
  svc_build_info: ["gauge", ["version", "backend_type"]],
  process_peak_rss_bytes: ["gauge", []],
  svc_http_requests_total: ["counter", ["method", "status", "operation"]],
  svc_http_request_duration_seconds: ["histogram", ["method", "operation"]],
  svc_http_request_size_bytes: ["histogram", ["method"]],
  svc_http_response_size_bytes: ["histogram", ["method"]],
  svc_delta_compression_ratio: ["histogram", []],
  svc_delta_bytes_saved_total: ["counter", []],
  svc_delta_encode_duration_seconds: ["histogram", []],
  svc_delta_decode_duration_seconds: ["histogram", []],
  svc_delta_decisions_total: ["counter", ["decision", "reason"]],
  svc_archive_backlog: ["gauge", []],
  svc_archive_conversions_total: ["counter", ["outcome"]],
  svc_archive_streams_copied_total: ["counter", []],
  svc_cache_hits_total: ["counter", []],
  svc_cache_misses_total: ["counter", []],
  svc_cache_corruption_total: ["counter", ["cache"]],
  svc_cache_size_bytes: ["gauge", []],
  svc_cache_entries: ["gauge", []],
  svc_cache_max_bytes: ["gauge", []],
  svc_cache_utilization_ratio: ["gauge", []],
  svc_cache_miss_rate_ratio: ["gauge", []],
  svc_codec_semaphore_available: ["gauge", []],
  svc_multipart_uploads_inflight: ["gauge", []],
  svc_multipart_inflight_bytes: ["gauge", []],
  svc_config_sync_total: ["counter", ["outcome"]],
  svc_oauth_logins_total: ["counter", ["outcome"]],
  svc_multipart_sweep_runs_total: ["counter", ["phase"]],
  svc_multipart_sweep_duration_seconds: ["histogram", ["phase"]],
  svc_multipart_swept_uploads_total: ["counter", ["state"]],
  svc_multipart_sweep_reclaimed_bytes_total: ["counter", []],
  svc_multipart_sweep_orphan_relay_dirs_total: ["counter", []],
  svc_multipart_sweep_orphan_relay_files_total: ["counter", []],
  svc_multipart_sweep_last_uploads_reclaimed: ["gauge", []],
  svc_multipart_sweep_last_reclaimed_bytes: ["gauge", []],
  svc_auth_attempts_total: ["counter", ["result"]],
  svc_auth_failures_total: ["counter", ["reason"]],
  svc_replication_list_calls_total: ["counter", []],
  svc_replication_head_calls_total: ["counter", []],
  svc_replication_dirs_completed_total: ["counter", []],
  // Beyond the spec's table: the admin plane's requests (the spec's operation label has no room).
  svc_admin_requests_total: ["counter", ["area", "method", "status"]],
  svc_iam_users: ["gauge", []],
  svc_iam_index_version: ["gauge", []],
  svc_iam_decisions_total: ["counter", ["decision", "reason"]],
  svc_iam_index_rebuilds_total: ["counter", []],
  svc_iam_index_rebuild_seconds: ["histogram", []],
  // Beyond the spec's table: the jobs room (maintenance jobs; bounded labels).
  svc_jobs: ["gauge", ["kind", "status"]],
  svc_job_objects_total: ["counter", ["type", "outcome"]],
  svc_job_bytes_total: ["counter", ["type"]],
  svc_write_gated_buckets: ["gauge", []],
  svc_fenced_buckets: ["gauge", []],
  // The event outbox and its dispatcher (issue 16; src/events/event-metrics.ts).
  svc_events_appended_total: ["counter", []],
  svc_events_committed_total: ["counter", []],
  svc_events_dropped_total: ["counter", []],
  svc_events_commit_failures_total: ["counter", []],
  svc_events_commit_lag_seconds: ["histogram", []],
  svc_event_outbox_rows: ["gauge", ["status"]],
  svc_event_deliveries_total: ["counter", ["result"]],
  svc_event_delivery_requests_total: ["counter", ["result"]],
  svc_event_delivery_duration_seconds: ["histogram", []],
  // Lifecycle runs (issue 17; jobs/lifecycle/): bounded action and outcome labels.
  svc_lifecycle_objects_total: ["counter", ["action", "outcome"]],
  svc_lifecycle_bytes_total: ["counter", ["action"]],
  // Encrypted objects that could not be read, by a fixed set of reasons (storage/encryption/).
  svc_encryption_decrypt_failures_total: ["counter", ["reason"]],
  // Usage counters (issue 18; src/objects/usage.ts): scans by trigger, batched writes.
  svc_usage_scans_total: ["counter", ["trigger", "outcome"]],
  svc_usage_scan_seconds: ["histogram", []],
  svc_usage_flushes_total: ["counter", ["outcome"]],
  // Diagnostics (issue 28; src/objects/diagnostics/): the integrity scan, bucket savings.
  svc_scrub_objects_total: ["counter", ["result"]],
  svc_scrub_findings_total: ["counter", ["kind"]],
  svc_scrub_running: ["gauge", []],
  svc_delta_efficiency_savings_ratio: ["gauge", ["bucket"]],
};
const PROCESS_LINUX = ["cpu_seconds_total", "resident_memory_bytes", "virtual_memory_bytes"]
  .concat("open_fds", "max_fds", "threads").map((name) => `process_${name}`);

Deno.test("every metric of the table exists with its type and labels; nothing else", async () => {
  const metrics = make();
  SEQUENCE.forEach((sample) => metrics.observeRequest(sample));
  metrics.delta.decisions.inc({ decision: "delta", reason: "ratio_met" });
  metrics.delta.archiveConversions.inc({ outcome: "converted" });
  metrics.sweep.runs.inc({ phase: "uploads" });
  metrics.sweep.duration.observe({ phase: "uploads" }, 0.2);
  metrics.sweep.sweptUploads.inc({ state: "idle" }, 2);
  metrics.events.depth.set({ status: "pending" }, 3);
  metrics.events.deliveries.inc({ result: "delivered" });
  metrics.events.requests.inc({ result: "timeout" });
  const { types, samples } = await scrape(metrics);
  const linux = Deno.build.os === "linux";
  const expected = [...Object.keys(TABLE), ...(linux ? PROCESS_LINUX : [])].sort();
  assert.deepEqual([...types.keys()].sort(), expected);
  for (const [name, [type, labels]] of Object.entries(TABLE)) {
    assert.equal(types.get(name), type, name);
    const own = samples.filter((s) => s.name.replace(/_(bucket|sum|count)$/, "") === name);
    for (const s of type === "histogram" ? own : own.filter((s) => s.name === name)) {
      const names = Object.keys(s.labels).filter((l) =>
        !(l === "le" && s.name.endsWith("_bucket"))
      );
      assert.deepEqual(names.sort(), [...labels].sort(), `${s.name} labels`);
    }
  }
  assert.ok(samples.every((s) => !s.name.startsWith("svc_tokio_")));
  assert.ok(![...types.keys()].some((name) => name.startsWith("nodejs_")));
  const value = (name: string, labels: Record<string, string> = {}) =>
    samples.find((s) => s.name === name && key(s.labels) === key(labels))?.value;
  assert.equal(value("svc_build_info", { version: "9.9.9", backend_type: "filesystem" }), 1);
  assert.equal(
    value("svc_delta_decisions_total", { decision: "delta", reason: "ratio_met" }),
    1,
  );
  assert.equal(value("svc_multipart_swept_uploads_total", { state: "idle" }), 2);
  assert.equal(value("svc_event_outbox_rows", { status: "pending" }), 3);
  assert.equal(value("svc_event_delivery_requests_total", { result: "timeout" }), 1);
  assert.equal(value("svc_multipart_uploads_inflight"), 0);
  assert.equal(value("svc_replication_dirs_completed_total"), 0);
  // Without a codec the semaphore gauge has HELP/TYPE and no sample.
  assert.equal(samples.filter((s) => s.name === "svc_codec_semaphore_available").length, 0);
  // Nothing leaks into prom-client's global registry.
  assert.ok(!(await globalRegistry.metrics()).includes("svc_"));
});

Deno.test("the write gate's gauges follow its buckets at scrape time", async () => {
  let stats: { held: number; fenced: number } | null = null;
  const metrics = make({ writeGate: () => stats });
  const gauges = async () => {
    const { samples } = await scrape(metrics);
    const value = (name: string) => samples.find((s) => s.name === name)?.value;
    return [value("svc_write_gated_buckets"), value("svc_fenced_buckets")];
  };
  assert.deepEqual(await gauges(), [0, 0]);
  stats = { held: 2, fenced: 1 };
  assert.deepEqual(await gauges(), [2, 1]);
});

Deno.test("auth counters follow authStats at scrape time, every label value present", async () => {
  const stats = zeroStats();
  const metrics = make({ authStats: () => stats });
  let { samples } = await scrape(metrics);
  assert.deepEqual(series(samples, "svc_auth_attempts_total"), [
    [key({ result: "failure" }), 0],
    [key({ result: "success" }), 0],
  ]);
  assert.deepEqual(series(samples, "svc_auth_failures_total"), [
    [key({ reason: "invalid_presigned" }), 0],
    [key({ reason: "invalid_signature" }), 0],
    [key({ reason: "missing_header" }), 0],
  ]);
  stats.attempts.success = 5;
  stats.attempts.failure = 2;
  stats.failures.missing_header = 1;
  stats.failures.invalid_signature = 1;
  ({ samples } = await scrape(metrics));
  assert.deepEqual(series(samples, "svc_auth_attempts_total"), [
    [key({ result: "failure" }), 2],
    [key({ result: "success" }), 5],
  ]);
  assert.deepEqual(series(samples, "svc_auth_failures_total"), [
    [key({ reason: "invalid_presigned" }), 0],
    [key({ reason: "invalid_signature" }), 1],
    [key({ reason: "missing_header" }), 1],
  ]);
});

Deno.test("process series: peak RSS, start time and the Linux collectors", async () => {
  const { samples } = await scrape(make());
  const value = (name: string) => samples.find((s) => s.name === name)?.value;
  const peak = value("process_peak_rss_bytes") ?? 0;
  assert.ok(peak > 0);
  const start = value("process_start_time_seconds") ?? 0;
  assert.ok(start <= Date.now() / 1000 && start > Date.now() / 1000 - 3600, `start ${start}`);
  if (Deno.build.os !== "linux") return;
  assert.ok(peak >= (value("process_resident_memory_bytes") ?? Infinity));
  assert.ok((value("process_cpu_seconds_total") ?? 0) > 0);
  assert.ok((value("process_virtual_memory_bytes") ?? 0) > peak);
  assert.ok((value("process_open_fds") ?? 0) > 2);
  assert.ok((value("process_max_fds") ?? 0) >= (value("process_open_fds") ?? 0));
  assert.ok((value("process_threads") ?? 0) >= 1);
});

Deno.test("codec slots and cache ratios are read at scrape time", async () => {
  let slots = 4;
  const metrics = make({ codecSlots: () => slots });
  const value = async (name: string) =>
    (await scrape(metrics)).samples.find((s) => s.name === name)?.value;
  assert.equal(await value("svc_codec_semaphore_available"), 4);
  slots = 0;
  assert.equal(await value("svc_codec_semaphore_available"), 0);
  assert.equal(await value("svc_cache_utilization_ratio"), 0);
  assert.equal(await value("svc_cache_miss_rate_ratio"), 0);
  metrics.cache.maxBytes.set(1000);
  metrics.cache.sizeBytes.set(250);
  metrics.cache.hits.inc(3);
  metrics.cache.misses.inc();
  assert.equal(await value("svc_cache_utilization_ratio"), 0.25);
  assert.equal(await value("svc_cache_miss_rate_ratio"), 0.25);
});

Deno.test("byte helpers and operator routes", () => {
  assert.equal(requestBytesOf(new Request("http://x/", { method: "GET" })), 0);
  const put = new Request("http://x/b/k", { method: "PUT", headers: { "content-length": "7" } });
  assert.equal(requestBytesOf(put), 7);
  const stream = new ReadableStream({ start: (c) => c.close() });
  assert.equal(
    requestBytesOf(new Request("http://x/", { method: "PUT", body: stream })),
    undefined,
  );
  const sized = new Response("abc", { headers: { "content-length": "3" } });
  assert.equal(responseBytesOf(sized, "GET"), 3);
  assert.equal(responseBytesOf(sized, "HEAD"), 0);
  assert.equal(responseBytesOf(new Response(null, { status: 204 }), "DELETE"), 0);
  // A 200 without a body (PutObject) is an answer of 0 bytes, not an unknown size.
  assert.equal(responseBytesOf(new Response(null, { headers: { etag: '"e"' } }), "PUT"), 0);
  assert.equal(responseBytesOf(new Response("abc"), "GET"), undefined);
  assert.equal(operatorOperation("/_/health"), "health");
  assert.equal(operatorOperation("/_/metrics"), "metrics");
  assert.equal(operatorOperation("/_/stats/"), "stats");
  assert.equal(operatorOperation("/_/ready"), undefined);
  assert.equal(operatorOperation("/_/constructor"), undefined);
});

Deno.test("promtool check metrics accepts the exposition (skipped without promtool)", async (t) => {
  const metrics = make({ codecSlots: () => 2 });
  SEQUENCE.forEach((sample) => metrics.observeRequest(sample));
  metrics.delta.compressionRatio.observe(0.3);
  metrics.sweep.runs.inc({ phase: "uploads" });
  const checked = await promtool((await metrics.render()).body);
  if (checked === undefined) {
    await t.step({ name: "promtool not on PATH", ignore: true, fn: () => {} });
    return;
  }
  assert.equal(checked.code, 0, checked.output);
  assert.equal(checked.output.trim(), "", checked.output);
});

Deno.test("metrics: admin requests are counted by a bounded area label", async () => {
  assert.equal(adminArea("/_/api/admin/login"), "login");
  assert.equal(adminArea("/_/api/admin/config/section/storage"), "config");
  assert.equal(adminArea("/_/api/whoami"), "whoami");
  assert.equal(adminArea("/_/stats"), "stats");
  // The browse panel and the UI's object I/O (upload, download, multipart) are one area.
  assert.equal(adminArea("/_/api/admin/objects/multipart/part"), "objects");
  assert.equal(adminArea("/_/api/admin/made-up-by-a-client"), "other");
  const metrics = make();
  metrics.observeAdminRequest({ method: "POST", path: "/_/api/admin/login", status: 401 });
  metrics.observeAdminRequest({ method: "GET", path: "/_/api/admin/x%20y", status: 404 });
  const { body } = await metrics.render();
  assert.match(body, /svc_admin_requests_total\{area="login",method="POST",status="401"\} 1/);
  assert.match(body, /svc_admin_requests_total\{area="other",method="GET",status="404"\} 1/);
});
