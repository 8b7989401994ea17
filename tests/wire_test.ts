/**
 * Black-box wire tests: request ids and error documents, hand-built aws-chunked bodies, clients
 * that vanish or stall mid-body, the request deadline, the concurrency queue, and a barrage of
 * malformed requests. Raw fetch and raw TCP only, so nothing is smoothed over by an SDK.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { randomBytes, signedFetch as fetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const md5hex = (b: Uint8Array) => createHash("md5").update(b).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32Base64(data: Uint8Array): string {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  c = (c ^ 0xffffffff) >>> 0;
  return btoa(String.fromCharCode(c >>> 24, (c >>> 16) & 255, (c >>> 8) & 255, c & 255));
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

/** An aws-chunked body of `data` cut into chunks of `sizes` (the rest in a last chunk). */
function awsChunked(data: Uint8Array, sizes: number[], mode: "unsigned-trailer" | "signed") {
  const sig = mode === "signed" ? `;chunk-signature=${"0123456789abcdef".repeat(4)}` : "";
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const size of [...sizes, data.length - sizes.reduce((a, b) => a + b, 0)]) {
    if (size <= 0) continue;
    const line = enc.encode(`${size.toString(16)}${sig}\r\n`);
    parts.push(line, data.subarray(at, at += size), enc.encode("\r\n"));
  }
  const crc = `x-amz-checksum-crc32:${crc32Base64(data)}\r\n`;
  const trailer = mode === "unsigned-trailer" ? crc : "";
  parts.push(enc.encode(`0${sig}\r\n${trailer}\r\n`));
  return concat(...parts);
}

function chunkedHeaders(decodedLength: number, mode: "unsigned-trailer" | "signed") {
  return {
    "content-encoding": "aws-chunked",
    "x-amz-decoded-content-length": String(decodedLength),
    ...(mode === "signed" ? { "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" } : {
      "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
      "x-amz-trailer": "x-amz-checksum-crc32",
    }),
  };
}

type RawResponse = { status: number; headers: Headers; text: string; code?: string };

type Init = Omit<RequestInit, "body"> & { body?: BodyInit | Uint8Array };

async function call(svc: SvcProcess, path: string, init: Init = {}): Promise<RawResponse> {
  const res = await fetch(`${svc.url}${path}`, init as RequestInit);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, code: codeOf(text) };
}

const codeOf = (text: string) => /<Error>\s*<Code>([^<]*)<\/Code>/.exec(text)?.[1];

/** Reads one HTTP/1.1 response off a raw connection (Content-Length or EOF framed). */
async function readResponse(conn: Deno.Conn, timeoutMs = 8000): Promise<RawResponse> {
  const timer = setTimeout(() => conn.close(), timeoutMs);
  let buf = new Uint8Array(0), eof = false;
  try {
    for (;;) {
      const end = dec.decode(buf).indexOf("\r\n\r\n"); // heads are ASCII
      if (end >= 0) {
        const [statusLine, ...lines] = dec.decode(buf.subarray(0, end)).split("\r\n");
        const headers = new Headers(
          lines.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]),
        );
        const status = Number(statusLine.split(" ")[1]);
        const declared = headers.get("content-length");
        const length = declared !== null ? Number(declared) : eof || status === 204 ? 0 : Infinity;
        const body = buf.subarray(end + 4);
        if (body.length >= length) {
          const text = dec.decode(body.subarray(0, length));
          return { status, headers, text, code: codeOf(text) };
        }
      }
      if (eof) throw new Error(`connection closed after ${buf.length} bytes: ${dec.decode(buf)}`);
      const chunk = new Uint8Array(65536);
      const n = await conn.read(chunk);
      if (n === null) eof = true;
      else buf = concat(buf, chunk.subarray(0, n));
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Opens a raw connection and sends `head` (request line and headers) plus optional body bytes. */
async function tcp(svc: SvcProcess, head: string, body?: Uint8Array): Promise<Deno.Conn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: svc.port });
  await conn.write(concat(enc.encode(`${head}\r\nHost: x\r\n\r\n`), body ?? new Uint8Array(0)));
  return conn;
}

async function rawRequest(svc: SvcProcess, head: string): Promise<RawResponse> {
  const conn = await tcp(svc, `${head}\r\nConnection: close`);
  try {
    return await readResponse(conn);
  } finally {
    try {
      conn.close();
    } catch { /* closed by the reader's timeout */ }
  }
}

const put = (body?: Init["body"], headers?: HeadersInit): Init => ({
  method: "PUT",
  body,
  headers,
});

async function newUpload(svc: SvcProcess, path: string): Promise<string> {
  const res = await call(svc, `${path}?uploads`, { method: "POST" });
  return /<UploadId>([^<]+)</.exec(res.text)![1];
}

/** Polls until `check` passes (the server finishes cleaning up after the client is gone). */
async function eventually(check: () => Promise<void>, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(50);
    }
  }
}

/** Nothing half-written is left: no object, no part, no staged file, no internal error logged. */
async function nothingStored(svc: SvcProcess, key: string, upload: string): Promise<void> {
  await eventually(async () => {
    assert.equal((await call(svc, key, { method: "HEAD" })).status, 404, key);
    const parts = await call(svc, upload);
    assert.ok(parts.status === 200 && !parts.text.includes("<Part>"), parts.text);
    const tmp = await Array.fromAsync(Deno.readDir(`${svc.dataDir}/.svc/tmp`)).catch(() => []);
    assert.deepEqual(tmp.map((e) => e.name), [], "no staged file is left");
  });
  assert.deepEqual(svc.logs.filter((l) => /request failed/.test(l)), [], "no internal error");
}

Deno.test("wire: ids, error documents, aws-chunked, disconnects, 405, malformed barrage", async (t) => {
  // Raw TCP requests below cannot carry a signature: this server runs open
  // (authentication: none); signed access is covered by tests/auth_test.ts and the SDK suites.
  await using svc = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
  assert.equal((await call(svc, "/wire", { method: "PUT" })).status, 200);

  await t.step("every response has x-amz-request-id; errors are full XML documents", async () => {
    const ok: [string, Init][] = [
      ["/wire/k", put("hello")],
      ["/wire/k", {}],
      ["/wire/k", { method: "HEAD" }],
      ["/wire?list-type=2", {}],
      ["/", {}],
      ["/", { method: "HEAD" }],
      ["/wire/k", { method: "DELETE" }],
    ];
    for (const [path, init] of ok) {
      const res = await call(svc, path, init);
      assert.ok(res.status < 300, `${init.method} ${path}: ${res.status}`);
      assert.match(res.headers.get("x-amz-request-id") ?? "", /^\w+$/, `${init.method} ${path}`);
    }
    const err = await call(svc, "/wire/missing%20key");
    assert.deepEqual([err.status, err.code], [404, "NoSuchKey"]);
    assert.match(err.headers.get("content-type") ?? "", /xml/);
    const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(err.text)?.[1];
    assert.ok(field("Message"));
    assert.equal(field("Resource"), "/wire/missing key");
    assert.equal(field("RequestId"), err.headers.get("x-amz-request-id"));
  });

  await t.step("aws-chunked: unsigned with crc32 trailer and signed, stored unframed", async () => {
    const data = randomBytes(200_000);
    for (const mode of ["unsigned-trailer", "signed"] as const) {
      const body = awsChunked(data, [8192, 1, 65536], mode);
      const res = await call(
        svc,
        `/wire/chunked-${mode}`,
        put(body, chunkedHeaders(data.length, mode)),
      );
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get("etag"), `"${md5hex(data)}"`);
      const got = await fetch(`${svc.url}/wire/chunked-${mode}`);
      assert.notEqual(got.headers.get("content-encoding"), "aws-chunked");
      assert.deepEqual(new Uint8Array(await got.arrayBuffer()), data, mode);
    }
    // An empty object, and an upload part, framed the same way.
    const none = awsChunked(new Uint8Array(0), [], "unsigned-trailer");
    const empty = await call(svc, "/wire/chunk0", put(none, chunkedHeaders(0, "unsigned-trailer")));
    assert.equal(empty.status, 200, empty.text);
    assert.equal((await call(svc, "/wire/chunk0")).text, "");
    const id = await newUpload(svc, "/wire/mp");
    const body = awsChunked(data, [1000], "signed");
    const part = await call(
      svc,
      `/wire/mp?uploadId=${id}&partNumber=1`,
      put(body, chunkedHeaders(data.length, "signed")),
    );
    assert.equal(part.headers.get("etag"), `"${md5hex(data)}"`);
  });

  await t.step(
    "x-amz-checksum-crc64nvme: header and trailer verified, a wrong one refused",
    async () => {
      // CRC-64/NVME of "123456789" from the CRC catalogue (0xAE8B14860A799888): an independent vector.
      const check = enc.encode("123456789");
      const right = "rosUhgp5mIg=";
      const ok = await call(svc, "/wire/nvme", put(check, { "x-amz-checksum-crc64nvme": right }));
      assert.equal(ok.status, 200, ok.text);
      const wrong = await call(
        svc,
        "/wire/nvme-wrong",
        put(check, { "x-amz-checksum-crc64nvme": "AAAAAAAAAAA=" }),
      );
      assert.deepEqual([wrong.status, wrong.code], [400, "BadDigest"]);
      assert.equal((await call(svc, "/wire/nvme-wrong")).status, 404, "nothing stored");
      // As an aws-chunked trailer (what the AWS CLI and SDKs send).
      const framed = concat(
        enc.encode("9\r\n"),
        check,
        enc.encode(`\r\n0\r\nx-amz-checksum-crc64nvme:${right}\r\n\r\n`),
      );
      const trailed = await call(
        svc,
        "/wire/nvme-trailer",
        put(framed, {
          ...chunkedHeaders(check.length, "unsigned-trailer"),
          "x-amz-trailer": "x-amz-checksum-crc64nvme",
        }),
      );
      assert.equal(trailed.status, 200, trailed.text);
      assert.equal((await call(svc, "/wire/nvme-trailer")).text, "123456789");
    },
  );

  await t.step("aws-chunked faults are 400 and store nothing", async () => {
    const data = randomBytes(10_000);
    const good = awsChunked(data, [4000], "unsigned-trailer");
    const headers = chunkedHeaders(data.length, "unsigned-trailer");
    const length = (n: number) => ({ ...headers, "x-amz-decoded-content-length": String(n) });
    const cases: [string, Uint8Array, Record<string, string>][] = [
      ["truncated after the first chunk", good.subarray(0, 4000 + 10), headers],
      ["truncated before the final CRLF", good.subarray(0, good.length - 2), headers],
      ["bad hex size", concat(enc.encode("zz\r\n"), good), headers],
      [
        "size larger than the data",
        concat(enc.encode("FFFF\r\n"), data, enc.encode("\r\n0\r\n\r\n")),
        headers,
      ],
      ["decoded length too large", good, length(data.length + 1)],
      ["decoded length too small", good, length(data.length - 1)],
      ["signature in an unsigned body", awsChunked(data, [], "signed"), headers],
      ["missing signature in a signed body", good, chunkedHeaders(data.length, "signed")],
      ["data after the end", concat(good, enc.encode("junk")), headers],
    ];
    for (const [what, body, h] of cases) {
      const res = await call(svc, "/wire/bad-chunked", put(body, h));
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.ok(res.code, what);
      assert.equal((await call(svc, "/wire/bad-chunked", { method: "HEAD" })).status, 404, what);
    }
    const { "x-amz-decoded-content-length": _, ...noLength } = headers;
    const missing = await call(svc, "/wire/bad-chunked", put(good, noLength));
    assert.deepEqual([missing.status, missing.code], [411, "MissingContentLength"]);
  });

  await t.step("a client that disconnects mid-body leaves nothing behind", async () => {
    const id = await newUpload(svc, "/wire/disc-mp");
    for (const target of ["/wire/disc", `/wire/disc-mp?uploadId=${id}&partNumber=1`]) {
      const conn = await tcp(
        svc,
        `PUT ${target} HTTP/1.1\r\nContent-Length: 1048576`,
        randomBytes(512 * 1024),
      );
      conn.close();
    }
    await nothingStored(svc, "/wire/disc", `/wire/disc-mp?uploadId=${id}`);
    // A client that stops sending early but still listens is told its body was incomplete.
    for (const target of ["/wire/disc", `/wire/disc-mp?uploadId=${id}&partNumber=1`]) {
      const conn = await tcp(
        svc,
        `PUT ${target} HTTP/1.1\r\nContent-Length: 1000`,
        randomBytes(500),
      );
      await conn.closeWrite();
      const res = await readResponse(conn);
      conn.close();
      assert.deepEqual([res.status, res.code], [400, "IncompleteBody"], target);
    }
    await nothingStored(svc, "/wire/disc", `/wire/disc-mp?uploadId=${id}`);
    assert.equal((await call(svc, "/_/health")).status, 200);
  });

  await t.step("unknown methods are 405 MethodNotAllowed", async () => {
    for (
      const [method, path] of [["PATCH", "/wire/k"], ["PATCH", "/wire"], ["PATCH", "/"], [
        "POST",
        "/wire/k",
      ]]
    ) {
      const res = await call(svc, path, { method });
      assert.deepEqual([res.status, res.code], [405, "MethodNotAllowed"], `${method} ${path}`);
      assert.ok(res.headers.get("x-amz-request-id"));
    }
  });

  await t.step("200 malformed requests all get 4xx XML and the server stays up", async () => {
    const fetches: [string, Init?][] = [
      ["/wire?max-keys=abc"],
      ["/wire?list-type=2&max-keys=-5"],
      ["/wire?list-type=2&continuation-token=%25%25%25"],
      ["/wire?uploads&max-uploads=x"],
      ["/wire/k?uploadId=zzz"],
      ["/wire/k?uploadId=zzz&max-parts=abc"],
      ["/wire/k?uploadId=x&partNumber=abc", put("x")],
      ["/wire?delete", { method: "POST", body: "<<<" }],
      ["/wire/k?uploadId=x", { method: "POST", body: "garbage" }],
      ["/Bad_Bucket", put()],
      ["/wire", put("<CreateBucketConfiguration>")],
      ["/wire/k", put("x", { "content-md5": "garbage" })],
      [
        "/wire/k",
        put("x", {
          "x-amz-decoded-content-length": "abc",
          "content-encoding": "aws-chunked",
          "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        }),
      ],
      ["/wire/%zz"],
      ["/no-such-bucket/k"],
      ["/wire/k?uploadId=..%2F..%2Fx", { method: "DELETE" }],
      ["/wire/k", { method: "PATCH" }],
      ["/?max-buckets=abc"],
      ["/wire/a//b", put("x")],
      ["/wire/k?uploadId=x&partNumber=1", put(undefined, { "x-amz-copy-source": "%zz" })],
    ];
    const raws = [
      "GET /%zz HTTP/1.1",
      "GET /wire/../../etc/passwd HTTP/1.1",
      "PUT /wire/../x HTTP/1.1\r\nContent-Length: 0",
      "GET /wire?max-keys=%ff HTTP/1.1",
      "PUT /wire/%2e%2e/%2e%2e/x HTTP/1.1\r\nContent-Length: 0",
    ];
    let count = 0;
    for (let round = 0; count < 200; round++) {
      for (const [path, init] of fetches) {
        const res = await call(svc, path, init);
        assert.ok(
          res.status >= 400 && res.status < 500 && res.code,
          `${path}: ${res.status} ${res.text}`,
        );
        assert.ok(res.headers.get("x-amz-request-id"), path);
        count++;
      }
      const head = raws[round % raws.length];
      const res = await rawRequest(svc, head);
      assert.ok(
        res.status >= 400 && res.status < 500 && res.code,
        `${head}: ${res.status} ${res.text}`,
      );
      count++;
    }
    assert.equal((await call(svc, "/_/health")).status, 200);
    assert.equal((await call(svc, "/wire/after", put("ok"))).status, 200);
    assert.equal((await call(svc, "/wire/after")).text, "ok");
    assert.deepEqual(svc.logs.filter((l) => /request failed/.test(l)), [], "no internal errors");
  });
});

Deno.test("wire: a request stalled past request_timeout_secs gets 504 and stores nothing", async () => {
  await using svc = await startSvc({
    env: { SVC_REQUEST_TIMEOUT_SECS: "1", SVC_AUTHENTICATION: "none" },
  });
  await call(svc, "/slow", put());
  const id = await newUpload(svc, "/slow/mp");
  for (const target of ["/slow/k", `/slow/mp?uploadId=${id}&partNumber=1`]) {
    const started = Date.now();
    // Half the body, then a 2 s stall: the answer comes at the 1 s deadline, mid-stall.
    const conn = await tcp(
      svc,
      `PUT ${target} HTTP/1.1\r\nContent-Length: 200000`,
      randomBytes(100_000),
    );
    const res = await readResponse(conn, 4000);
    const elapsed = Date.now() - started;
    conn.close();
    assert.deepEqual([res.status, res.code], [504, "RequestTimeout"], target);
    assert.ok(elapsed >= 900 && elapsed < 3500, `answered after ${elapsed} ms`);
    assert.ok(res.headers.get("x-amz-request-id"));
  }
  await nothingStored(svc, "/slow/k", `/slow/mp?uploadId=${id}`);
  assert.equal((await call(svc, "/slow/k", put("fast"))).status, 200);
});

Deno.test("wire: max_concurrent_requests queues the excess instead of refusing it", async () => {
  // Raw TCP uploads hold the slots below; they cannot be signed, so this server runs open.
  await using svc = await startSvc({
    env: { SVC_MAX_CONCURRENT_REQUESTS: "2", SVC_AUTHENTICATION: "none" },
  });
  await call(svc, "/queue", put());
  const bodies = Array.from({ length: 10 }, () => randomBytes(256 * 1024));
  const results = await Promise.all(bodies.map((body, i) => call(svc, `/queue/k${i}`, put(body))));
  assert.deepEqual(results.map((r) => r.status), Array(10).fill(200));
  for (const [i, body] of bodies.entries()) {
    const got = await fetch(`${svc.url}/queue/k${i}`);
    assert.deepEqual(new Uint8Array(await got.arrayBuffer()), body);
  }
  // Two uploads that stall hold both slots: a third request waits until one finishes.
  const held = await Promise.all(
    [0, 1].map((i) =>
      tcp(svc, `PUT /queue/held${i} HTTP/1.1\r\nContent-Length: 10`, enc.encode("12345"))
    ),
  );
  await sleep(300);
  let answered = false;
  const waiting = call(svc, "/queue", { method: "HEAD" }).then((r) => (answered = true, r));
  await sleep(400);
  assert.equal(answered, false, "the third request queued behind the two held slots");
  await held[0].write(enc.encode("67890"));
  assert.equal((await readResponse(held[0])).status, 200);
  assert.equal((await waiting).status, 200);
  await held[1].write(enc.encode("abcde"));
  assert.equal((await readResponse(held[1])).status, 200);
  held.forEach((c) => c.close());
  assert.equal((await call(svc, "/queue/held1")).text, "12345abcde");
});

Deno.test("a versionId other than null is refused and touches nothing", async () => {
  await using svc = await startSvc();
  await fetch(`${svc.url}/vbucket`, { method: "PUT" }).then((r) => r.body?.cancel());
  await fetch(`${svc.url}/vbucket/k`, { method: "PUT", body: "v1" }).then((r) => r.body?.cancel());
  for (const method of ["GET", "HEAD", "DELETE"]) {
    const res = await fetch(`${svc.url}/vbucket/k?versionId=abc`, { method });
    const text = await res.text();
    assert.equal(res.status, 400, method);
    if (method !== "HEAD") assert.match(text, /<Code>InvalidArgument<\/Code>/);
  }
  const nullVersion = await fetch(`${svc.url}/vbucket/k?versionId=null`);
  assert.equal(await nullVersion.text(), "v1");
});
