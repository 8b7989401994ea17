import assert from "node:assert/strict";
import { S3Client } from "./s3-client.ts";
import { BackendError, BackendUnavailableError, svcErrorFromBackend } from "./s3-errors.ts";
import { BackendTimeoutError } from "./s3-transport.ts";
import { errorResponse, scriptedServer, testOptions } from "../../testing/s3-test-server.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test("a 503 SlowDown is retried and the retry's answer returned", opts, async () => {
  const server = scriptedServer((_, i) =>
    i === 0
      ? errorResponse(503, "SlowDown", "Please reduce your request rate.")
      : new Response("ok")
  );
  try {
    const client = new S3Client(testOptions(server.endpoint));
    const response = await client.send({ method: "GET", bucket: "b", key: "k", idempotent: true });
    assert.equal(response.text, "ok");
    assert.equal(server.requests.length, 2);
  } finally {
    await server.close();
  }
});

Deno.test("throttling is retried even for requests that are not idempotent", opts, async () => {
  const server = scriptedServer((_, i) =>
    i < 2 ? errorResponse(429, "TooManyRequests") : new Response("done")
  );
  try {
    const client = new S3Client(testOptions(server.endpoint));
    const response = await client.send({ method: "POST", bucket: "b", idempotent: false });
    assert.equal(response.text, "done");
    assert.equal(server.requests.length, 3);
  } finally {
    await server.close();
  }
});

Deno.test("persistent throttling gives up after 3 attempts, as SlowDown", opts, async () => {
  const server = scriptedServer(() => errorResponse(503, "SlowDown"));
  try {
    const client = new S3Client(testOptions(server.endpoint));
    const err = await client.send({ method: "GET", bucket: "b", idempotent: true }).catch((e) => e);
    assert.ok(err instanceof BackendError);
    assert.equal(server.requests.length, 3);
    const svc = svcErrorFromBackend(err, "b");
    assert.equal(svc.code, "SlowDown");
    assert.equal(svc.status, 503);
  } finally {
    await server.close();
  }
});

Deno.test("a 500 is retried only when the request is idempotent", opts, async () => {
  const server = scriptedServer(() => errorResponse(500, "InternalError", "boom"));
  try {
    const client = new S3Client(testOptions(server.endpoint));
    await assert.rejects(client.send({ method: "POST", bucket: "b", idempotent: false }));
    assert.equal(server.requests.length, 1);
    await assert.rejects(client.send({ method: "GET", bucket: "b", idempotent: true }));
    assert.equal(server.requests.length, 4);
  } finally {
    await server.close();
  }
});

Deno.test("other errors become InternalError naming the backend's code, never a secret", () => {
  const err = new BackendError(400, "InvalidStorageClass", "bad class", 'PUT "b/k"', false);
  const svc = svcErrorFromBackend(err, "b", "k");
  assert.equal(svc.code, "InternalError");
  assert.match(svc.message, /400 InvalidStorageClass to PUT "b\/k": bad class/);
  assert.doesNotMatch(svc.message, /very-secret/);
  const forbidden = new BackendError(403, "NoSuchBucket", "", 'HEAD "b/k"', false);
  assert.equal(svcErrorFromBackend(forbidden, "b").code, "NoSuchBucket");
  const notEmpty = new BackendError(409, "BucketNotEmpty", "not empty", 'DELETE "b"', false);
  assert.equal(svcErrorFromBackend(notEmpty, "b").code, "BucketNotEmpty");
});

Deno.test("a body that stalls mid-way fails with a timeout instead of hanging", opts, async () => {
  const server = scriptedServer(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("first bytes"));
        }, // and then nothing, ever
      }),
    )
  );
  try {
    const client = new S3Client(
      testOptions(server.endpoint, { readTimeoutMs: 150, stallGraceMs: 50 }),
    );
    const response = await client.send({
      method: "GET",
      bucket: "b",
      key: "k",
      idempotent: true,
      stream: true,
    });
    const started = performance.now();
    const err = await new Response(response.body).text().catch((e) => e);
    assert.ok(err instanceof BackendTimeoutError, String(err));
    assert.match(err.message, /stalled for more than 200 ms/);
    assert.ok(performance.now() - started < 2000);
  } finally {
    await server.close();
  }
});

Deno.test(
  "missing response headers time out; a backend silent since is not asked again",
  opts,
  async () => {
    const server = scriptedServer(() => new Promise<Response>(() => {}));
    try {
      const client = new S3Client(
        testOptions(server.endpoint, { connectTimeoutMs: 50, readTimeoutMs: 50 }),
      );
      const head = () => client.send({ method: "HEAD", bucket: "b", idempotent: true });
      const err = await head().catch((e) => e);
      assert.ok(err instanceof BackendUnavailableError, String(err));
      assert.match(err.message, /no response headers within 100 ms/);
      // It answered nothing while the attempt waited: a retry would only wait again.
      assert.equal(server.requests.length, 1);
      // Now suspected: the next request is a probe, waiting the connect timeout only.
      const probe = await head().catch((e) => e);
      assert.match(probe.message, /no response headers within 50 ms \(it has answered nothing/);
    } finally {
      await server.close();
    }
  },
);

Deno.test("a timeout is retried while the backend answers other requests", opts, async () => {
  // The first request hangs; every other one is answered at once.
  const server = scriptedServer((_, index) =>
    index === 0 ? new Promise<Response>(() => {}) : new Response(null, { status: 200 })
  );
  try {
    const client = new S3Client(
      testOptions(server.endpoint, { connectTimeoutMs: 100, readTimeoutMs: 100 }),
    );
    const head = () => client.send({ method: "HEAD", bucket: "b", idempotent: true });
    const slow = head();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await head()).status, 200);
    assert.equal((await slow).status, 200);
    assert.equal(server.requests.length, 3);
  } finally {
    await server.close();
  }
});

Deno.test("an unreachable backend is an error (503 SlowDown, retryable), not an absence", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const client = new S3Client(testOptions(`http://127.0.0.1:${port}`));
  const err = await client.send({ method: "HEAD", bucket: "b", key: "k", idempotent: true })
    .catch((e) => e);
  assert.ok(err instanceof BackendUnavailableError);
  const svc = svcErrorFromBackend(err, "b", "k");
  assert.equal(svc.code, "SlowDown");
  assert.equal(svc.status, 503);
});

Deno.test(
  "file bodies go with a Content-Length, unsigned payload, and no checksum headers",
  opts,
  async () => {
    const path = await Deno.makeTempFile();
    await Deno.writeFile(path, new TextEncoder().encode("0123456789"));
    let received = "";
    const server = scriptedServer(async (request) => {
      received = await request.text();
      return new Response(null, { headers: { etag: '"x"' } });
    });
    try {
      const client = new S3Client(testOptions(server.endpoint));
      const response = await client.send({
        method: "PUT",
        bucket: "b",
        key: "dir/a b+c",
        body: { path, start: 2, length: 5 },
        idempotent: true,
      });
      assert.equal(response.headers.get("etag"), '"x"');
      assert.equal(received, "23456");
      const headers = server.requests[0].headers;
      assert.equal(headers.get("content-length"), "5");
      assert.equal(headers.get("transfer-encoding"), null);
      assert.equal(headers.get("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
      assert.match(headers.get("authorization") ?? "", /^AWS4-HMAC-SHA256 Credential=AKIDTEST\//);
      assert.deepEqual([...headers.keys()].filter((h) => h.includes("checksum")), []);
      assert.equal(server.requests[0].url.pathname, "/b/dir/a%20b%2Bc");
    } finally {
      await server.close();
      await Deno.remove(path);
    }
  },
);

Deno.test("text bodies are signed with their real sha256", opts, async () => {
  const server = scriptedServer(() => new Response("ok"));
  try {
    const client = new S3Client(testOptions(server.endpoint));
    await client.send({ method: "POST", bucket: "b", body: "abc", idempotent: false });
    assert.equal(
      server.requests[0].headers.get("x-amz-content-sha256"),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  } finally {
    await server.close();
  }
});

Deno.test("virtual-host style puts the bucket in the host name", () => {
  const client = new S3Client(testOptions("https://s3.example.com", { forcePathStyle: false }));
  assert.equal(client.url("bkt", "a/b c"), "https://bkt.s3.example.com/a/b%20c");
  const path = new S3Client(testOptions("https://s3.example.com:9000"));
  assert.equal(
    path.url("bkt", "k", { "list-type": "2", prefix: "a b", delimiter: undefined }),
    "https://s3.example.com:9000/bkt/k?list-type=2&prefix=a%20b",
  );
  assert.equal(path.url(), "https://s3.example.com:9000/");
  assert.equal(path.url("bkt"), "https://s3.example.com:9000/bkt");
  assert.equal(client.url("bkt"), "https://bkt.s3.example.com/");
});

Deno.test("two identical requests in one second carry different signatures", opts, async () => {
  const server = scriptedServer(() => new Response(null, { status: 204 }));
  try {
    const client = new S3Client(testOptions(server.endpoint));
    for (let i = 0; i < 2; i++) {
      await client.send({ method: "DELETE", bucket: "b", idempotent: true });
    }
    const [first, second] = server.requests.map((r) => r.headers);
    assert.equal(first.get("x-amz-date")?.slice(0, 13), second.get("x-amz-date")?.slice(0, 13));
    assert.match(first.get("authorization") ?? "", /amz-sdk-invocation-id/);
    assert.notEqual(first.get("amz-sdk-invocation-id"), second.get("amz-sdk-invocation-id"));
    assert.notEqual(first.get("authorization"), second.get("authorization"));
  } finally {
    await server.close();
  }
});
