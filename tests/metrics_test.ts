/**
 * Black-box tests of `GET /_/metrics` (SPEC "Metrics"): after a known sequence of S3 calls the
 * exposition holds exact request counters per (method, status, operation), the auth counters,
 * build info, no bucket name or key, and it passes `promtool check metrics` when promtool is on
 * PATH. Auth counters stay at zero with `authentication: none`.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { VERSION } from "../src/lib/version.ts";
import { assertError, assertSdkError } from "./helpers/assertions.ts";
import { bytesOf, randomBytes, signedFetch, startSvc } from "./helpers/svc.ts";
import { promtool } from "./helpers/promtool.ts";

const Bucket = "metrics-bucket";

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Strict text-format parser: a line it does not understand fails the test. */
function parse(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const type = /^# TYPE ([a-zA-Z_:][\w:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1], type[2]);
      continue;
    }
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const pairs = [...(m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)];
    assert.equal(pairs.map((p) => p[0]).join(","), m[2] ?? "", `bad labels: ${line}`);
    const labels = Object.fromEntries(pairs.map(([, k, v]) => [k, v.replace(/\\(.)/g, "$1")]));
    const value = m[3] === "+Inf" ? Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value), `NaN in ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples };
}

/** `name`'s samples as sorted [labels JSON, value] pairs, for exact comparison. */
function series(samples: Sample[], name: string): Array<[string, number]> {
  return samples.filter((s) => s.name === name)
    .map((s): [string, number] => [JSON.stringify(s.labels), s.value])
    .sort(([a], [b]) => a.localeCompare(b));
}
const row = (labels: Record<string, string>, value: number): [string, number] => [
  JSON.stringify(labels),
  value,
];
const sorted = (rows: Array<[string, number]>) => rows.sort(([a], [b]) => a.localeCompare(b));

async function scrape(url: string): Promise<string> {
  const response = await fetch(`${url}/_/metrics`);
  const body = await response.text();
  assert.equal(response.status, 200, body);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return body;
}

Deno.test({
  name: "metrics: exact request and auth counters after a known sequence",
  async fn(t) {
    await using svc = await startSvc();
    const s3 = svc.client();
    const body = randomBytes(3000);
    await s3.send(new S3.CreateBucketCommand({ Bucket }));
    await s3.send(new S3.PutObjectCommand({ Bucket, Key: "obj-1", Body: body }));
    await s3.send(new S3.PutObjectCommand({ Bucket, Key: "obj-2", Body: body }));
    const got = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "obj-1" }));
    assert.equal((await bytesOf(got.Body)).length, body.length);
    await assertSdkError(
      s3.send(new S3.HeadObjectCommand({ Bucket, Key: "absent" })),
      404,
      "NotFound",
    );
    await assertError(fetch(`${svc.url}/${Bucket}/obj-1`), 403, "AccessDenied");
    await s3.send(new S3.ListBucketsCommand({}));

    const text = await scrape(svc.url);
    assert.ok(!text.includes(Bucket) && !text.includes("obj-1"), "bucket or key in a label");
    const { types, samples } = parse(text);
    assert.deepEqual(
      series(samples, "svc_http_requests_total"),
      sorted([
        row({ method: "PUT", status: "200", operation: "create_bucket" }, 1),
        row({ method: "PUT", status: "200", operation: "put_object" }, 2),
        row({ method: "GET", status: "200", operation: "get_object" }, 1),
        row({ method: "HEAD", status: "404", operation: "head_object" }, 1),
        row({ method: "GET", status: "403", operation: "get_object" }, 1),
        row({ method: "GET", status: "200", operation: "list_buckets" }, 1),
      ]),
    );
    assert.deepEqual(
      series(samples, "svc_http_request_duration_seconds_count"),
      sorted([
        row({ method: "PUT", operation: "create_bucket" }, 1),
        row({ method: "PUT", operation: "put_object" }, 2),
        row({ method: "GET", operation: "get_object" }, 2),
        row({ method: "HEAD", operation: "head_object" }, 1),
        row({ method: "GET", operation: "list_buckets" }, 1),
      ]),
    );
    const getBytes = samples.find((s) =>
      s.name === "svc_http_response_size_bytes_sum" && s.labels.method === "GET"
    );
    assert.ok((getBytes?.value ?? 0) >= body.length, `GET response bytes ${getBytes?.value}`);
    assert.deepEqual(
      series(samples, "svc_auth_attempts_total"),
      sorted([row({ result: "success" }, 6), row({ result: "failure" }, 1)]),
    );
    assert.deepEqual(
      series(samples, "svc_auth_failures_total"),
      sorted([
        row({ reason: "missing_header" }, 1),
        row({ reason: "invalid_presigned" }, 0),
        row({ reason: "invalid_signature" }, 0),
      ]),
    );
    assert.deepEqual(series(samples, "svc_build_info"), [
      row({ version: VERSION, backend_type: "filesystem" }, 1),
    ]);
    assert.ok(samples.some((s) => s.name === "process_peak_rss_bytes" && s.value > 0));
    assert.ok(samples.some((s) => s.name === "process_start_time_seconds" && s.value > 0));
    assert.equal(types.get("svc_delta_decisions_total"), "counter");
    assert.equal(types.get("svc_multipart_uploads_inflight"), "gauge");
    assert.ok(![...types.keys()].some((name) => name.startsWith("svc_tokio_")));

    // The first scrape is counted once it has been answered.
    const again = parse(await scrape(svc.url)).samples;
    assert.deepEqual(
      series(again, "svc_http_requests_total").filter(([labels]) => labels.includes("metrics")),
      [row({ method: "GET", status: "200", operation: "metrics" }, 1)],
    );

    const checked = await promtool(text);
    if (checked === undefined) {
      await t.step({
        name: "promtool check metrics (promtool not on PATH)",
        ignore: true,
        fn() {},
      });
    } else {
      assert.equal(checked.code, 0, checked.output);
    }
  },
});

Deno.test({
  name: "metrics: auth counters stay at zero with authentication none",
  async fn() {
    await using svc = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
    for (const send of [fetch, signedFetch]) {
      const response = await send(`${svc.url}/`);
      assert.equal(response.status, 200, await response.text());
    }
    const { samples } = parse(await scrape(svc.url));
    assert.deepEqual(
      series(samples, "svc_auth_attempts_total"),
      sorted([row({ result: "success" }, 0), row({ result: "failure" }, 0)]),
    );
    assert.ok(series(samples, "svc_auth_failures_total").every(([, value]) => value === 0));
    assert.deepEqual(
      series(samples, "svc_http_requests_total"),
      [row({ method: "GET", status: "200", operation: "list_buckets" }, 2)],
    );
  },
});

Deno.test("metrics: every response is observed in svc_http_response_size_bytes", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket })); // 200, no body
  await s3.send(new S3.PutObjectCommand({ Bucket, Key: "k", Body: "12345" })); // 200, no body
  await s3.send(new S3.HeadObjectCommand({ Bucket, Key: "k" })); // HEAD
  const got = await s3.send(new S3.GetObjectCommand({ Bucket, Key: "k" })); // 5 bytes
  assert.equal((await bytesOf(got.Body)).length, 5);
  await s3.send(new S3.DeleteObjectCommand({ Bucket, Key: "k" })); // 204
  await assertError(fetch(`${svc.url}/${Bucket}/k`), 403, "AccessDenied"); // error document
  for (const path of ["/_/health", "/_/nope"]) {
    const response = await fetch(`${svc.url}${path}`);
    assert.ok((await response.text()).length > 0, path);
  }
  const { samples } = parse(await scrape(svc.url));
  const perMethod = (name: string) => {
    const totals = new Map<string, number>();
    for (const s of samples.filter((s) => s.name === name)) {
      totals.set(s.labels.method, (totals.get(s.labels.method) ?? 0) + s.value);
    }
    return [...totals].sort(([a], [b]) => a.localeCompare(b));
  };
  // One observation per answered request, whatever its body: count equals the request total.
  const requests = perMethod("svc_http_requests_total");
  // `/_/nope` has no operation label, so it is in neither series.
  assert.deepEqual(requests, [["DELETE", 1], ["GET", 3], ["HEAD", 1], ["PUT", 2]]);
  assert.deepEqual(perMethod("svc_http_response_size_bytes_count"), requests);
  const sum = perMethod("svc_http_response_size_bytes_sum");
  assert.deepEqual(sum.filter(([method]) => method !== "GET"), [
    ["DELETE", 0],
    ["HEAD", 0],
    ["PUT", 0],
  ]);
  // The GET bytes: the 5-byte object, the error document and the health answer.
  assert.ok((sum.find(([m]) => m === "GET")?.[1] ?? 0) > 5 + 100 + 10);
});

Deno.test("metrics: the startup sweep and uploads in flight are reported", async () => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "sweep-bucket" }));
  await s3.send(new S3.CreateMultipartUploadCommand({ Bucket: "sweep-bucket", Key: "a" }));
  await s3.send(new S3.CreateMultipartUploadCommand({ Bucket: "sweep-bucket", Key: "b" }));
  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  assert.match(text, /^svc_multipart_uploads_inflight 2$/m);
  assert.match(text, /^svc_multipart_sweep_runs_total\{phase="startup"\} 1$/m);
  assert.match(text, /^svc_multipart_sweep_last_uploads_reclaimed 0$/m);
  s3.destroy();
});
