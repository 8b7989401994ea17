import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { Readable } from "node:stream";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { SvcError } from "../errors.ts";
import {
  type AwsChunkedOptions,
  decodeAwsChunked,
  MAX_LINE,
  streamingMode,
} from "./aws-chunked.ts";
import { ChecksumAccumulator } from "./checksums.ts";

const enc = new TextEncoder();
const SIG = "a".repeat(64);
const ECDSA_SIG = "3045" + "ab".repeat(69) + "*".repeat(2); // 142 hex digits, padded to 144

function concat(parts: (Uint8Array | string)[]): Uint8Array {
  const bytes = parts.map((p) => typeof p === "string" ? enc.encode(p) : p);
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bytes) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

interface EncodeOptions {
  signatures?: string[]; // one per chunk, the final empty chunk included
  trailers?: [string, string][];
  trailerSignature?: string;
  upper?: boolean;
}

/** Writes an aws-chunked body the way the SDKs do (see the format in aws-chunked.ts). */
function encodeChunked(chunks: Uint8Array[], o: EncodeOptions = {}): Uint8Array {
  const parts: (Uint8Array | string)[] = [];
  [...chunks, new Uint8Array(0)].forEach((chunk, i) => {
    const hex = o.upper ? chunk.length.toString(16).toUpperCase() : chunk.length.toString(16);
    const sig = o.signatures ? `;chunk-signature=${o.signatures[i]}` : "";
    parts.push(`${hex}${sig}\r\n`);
    if (chunk.length > 0) parts.push(chunk, "\r\n");
  });
  for (const [name, value] of o.trailers ?? []) parts.push(`${name}:${value}\r\n`);
  if (o.trailerSignature) parts.push(`x-amz-trailer-signature:${o.trailerSignature}\r\n`);
  parts.push("\r\n");
  return concat(parts);
}

function pieces(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(bytes.slice(at, cut));
    at = cut;
  }
  return out;
}

function streamOf(parts: Uint8Array[], failWith?: unknown): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < parts.length) controller.enqueue(parts[i++]);
      else if (failWith) controller.error(failWith);
      else controller.close();
    },
  });
}

async function decode(parts: Uint8Array[], options: AwsChunkedOptions, failWith?: unknown) {
  const { stream, trailers } = decodeAwsChunked(streamOf(parts, failWith), options);
  const out: Uint8Array[] = [];
  for await (const piece of stream) out.push(piece);
  return { data: concat(out), views: out, trailers: await trailers };
}

function bytes(n: number, seed = 1): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

const UNSIGNED_TRAILER = { signed: false, trailer: true } as const;
const SIGNED = { signed: true, trailer: false } as const;
const SIGNED_TRAILER = { signed: true, trailer: true } as const;

Deno.test("streamingMode maps every x-amz-content-sha256 streaming value", () => {
  assert.deepEqual(streamingMode("STREAMING-UNSIGNED-PAYLOAD-TRAILER"), {
    signed: false,
    trailer: true,
    ecdsa: false,
  });
  assert.deepEqual(streamingMode("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"), {
    signed: true,
    trailer: true,
    ecdsa: false,
  });
  assert.equal(streamingMode("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD")?.ecdsa, true);
  assert.equal(streamingMode("UNSIGNED-PAYLOAD"), undefined);
  assert.equal(
    streamingMode("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    undefined,
  );
});

Deno.test("unsigned trailer body as the JS SDK writes it", async () => {
  const a = bytes(30000);
  const b = bytes(40000, 9);
  const body = encodeChunked([a, b], { trailers: [["x-amz-checksum-crc32", "n+HHwQ=="]] });
  const got = await decode([body], { ...UNSIGNED_TRAILER, decodedLength: 70000 });
  assert.deepEqual(got.data, concat([a, b]));
  assert.deepEqual([...got.trailers], [["x-amz-checksum-crc32", "n+HHwQ=="]]);
});

Deno.test("AWS sigv4-streaming example: onChunk sees each chunk and can verify its signature", async () => {
  // The published example: 66560 'a' bytes in chunks of 65536 and 1024, with its signatures.
  const published = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
  ];
  const data = new Uint8Array(66560).fill(97);
  const body = encodeChunked([data.subarray(0, 65536), data.subarray(65536)], {
    signatures: published,
    upper: true,
  });
  assert.equal(body.length, 66824, "the example's Content-Length");
  const hmac = (key: string | Uint8Array, text: string) =>
    createHmac("sha256", key).update(text).digest();
  const key = ["20130524", "us-east-1", "s3", "aws4_request"]
    .reduce<string | Uint8Array>(
      (k, part) => hmac(k, part),
      "AWS4wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    );
  let previous = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
  const seen: number[] = [];
  const onChunk = (signature: string | undefined, views: readonly Uint8Array[]) => {
    const hash = createHash("sha256");
    for (const view of views) hash.update(view);
    const empty = createHash("sha256").digest("hex");
    const toSign = [
      "AWS4-HMAC-SHA256-PAYLOAD",
      "20130524T000000Z",
      "20130524/us-east-1/s3/aws4_request",
      previous,
      empty,
      hash.digest("hex"),
    ].join("\n");
    const expected = createHmac("sha256", key).update(toSign).digest("hex");
    if (signature !== expected) throw new SvcError("AccessDenied", "chunk signature mismatch");
    previous = expected;
    seen.push(views.reduce((n, v) => n + v.length, 0));
  };
  const split = pieces(body, [1000, 16384, 40000, 65620, 65700, 66800]);
  const got = await decode(split, { ...SIGNED, decodedLength: 66560, onChunk });
  assert.deepEqual(seen, [65536, 1024, 0]);
  assert.deepEqual(got.data, data);

  const tampered = body.slice();
  tampered[70000 - 3000] = 98; // one byte of the second chunk's data
  await assert.rejects(decode([tampered], { ...SIGNED, onChunk }), /chunk signature mismatch/);
});

Deno.test("signed trailer body: trailer signature reaches onTrailers, not the map", async () => {
  const data = bytes(5000);
  const body = encodeChunked([data], {
    signatures: [SIG, "b".repeat(64)],
    trailers: [["X-Amz-Checksum-CRC32C", " abc= "]],
    trailerSignature: "c".repeat(64),
  });
  let seen: [string, string][] = [];
  let sig: string | undefined;
  const got = await decode([body], {
    ...SIGNED_TRAILER,
    onTrailers: (trailers, signature) => {
      seen = [...trailers];
      sig = signature;
    },
  });
  assert.deepEqual(got.data, data);
  assert.deepEqual(seen, [["x-amz-checksum-crc32c", "abc="]]);
  assert.deepEqual([...got.trailers], seen);
  assert.equal(sig, "c".repeat(64));
});

Deno.test("ECDSA (SigV4a) chunk signatures are accepted and unpadded", async () => {
  const signatures: (string | undefined)[] = [];
  const body = encodeChunked([bytes(10)], { signatures: [ECDSA_SIG, ECDSA_SIG] });
  const got = await decode([body], {
    ...SIGNED,
    ecdsa: true,
    onChunk: (s) => void signatures.push(s),
  });
  assert.equal(got.data.length, 10);
  assert.deepEqual(signatures, [ECDSA_SIG.replace(/\*+$/, ""), ECDSA_SIG.replace(/\*+$/, "")]);
  await assert.rejects(decode([body], SIGNED), /chunk signature is malformed/);
});

Deno.test("empty bodies in every variant", async () => {
  for (
    const [options, body] of [
      [UNSIGNED_TRAILER, "0\r\n\r\n"],
      [UNSIGNED_TRAILER, "0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"],
      [SIGNED, `0;chunk-signature=${SIG}\r\n\r\n`],
      [SIGNED_TRAILER, `0;chunk-signature=${SIG}\r\n\r\n`],
    ] as const
  ) {
    const got = await decode([enc.encode(body)], { ...options, decodedLength: 0 });
    assert.equal(got.data.length, 0);
  }
});

Deno.test("every split point, one byte at a time, and random pieces decode the same", async () => {
  const chunks = [bytes(7), bytes(300, 2), bytes(1, 3)];
  const expected = concat(chunks);
  const samples: [AwsChunkedOptions, Uint8Array][] = [
    [UNSIGNED_TRAILER, encodeChunked(chunks, { trailers: [["x-amz-checksum-sha256", "x/y+=="]] })],
    [
      SIGNED_TRAILER,
      encodeChunked(chunks, {
        signatures: [SIG, SIG, SIG, SIG],
        trailers: [["x-amz-checksum-crc32", "AAAAAA=="]],
        trailerSignature: SIG,
      }),
    ],
  ];
  for (const [options, body] of samples) {
    const hooked = { ...options, onChunk: () => {} };
    for (let cut = 0; cut <= body.length; cut++) {
      for (const o of [options, hooked]) {
        const got = await decode(pieces(body, [cut]), { ...o, decodedLength: expected.length });
        assert.deepEqual(got.data, expected, `split at ${cut}`);
        assert.equal(got.trailers.size, 1);
      }
    }
    const ones = pieces(body, Array.from({ length: body.length - 1 }, (_, i) => i + 1));
    assert.deepEqual((await decode(ones, options)).data, expected);
    assert.deepEqual((await decode(ones, hooked)).data, expected);
    for (let round = 0; round < 200; round++) {
      const cuts = Array.from({ length: 6 }, () => Math.floor(Math.random() * body.length));
      cuts.sort((x, y) => x - y);
      assert.deepEqual((await decode(pieces(body, cuts), hooked)).data, expected, `${cuts}`);
    }
  }
});

Deno.test("data passes through as views of the source pieces (no copies)", async () => {
  const body = encodeChunked([bytes(100), bytes(50)], { trailers: [] });
  for (const options of [UNSIGNED_TRAILER, { ...UNSIGNED_TRAILER, onChunk: () => {} }]) {
    const parts = pieces(body, [60, 120]);
    const got = await decode(parts, options);
    assert.ok(got.views.every((v) => parts.some((p) => p.buffer === v.buffer)));
    assert.equal(got.data.length, 150);
  }
});

Deno.test("with onChunk nothing of a chunk is released before onChunk resolves", async () => {
  const body = encodeChunked([bytes(10, 1), bytes(10, 2), bytes(10, 3)], {
    signatures: [SIG, SIG, SIG, SIG],
  });
  const released: number[] = [];
  let calls = 0;
  const { stream } = decodeAwsChunked(streamOf([body]), {
    ...SIGNED,
    onChunk: async () => {
      await new Promise((r) => setTimeout(r, 1));
      assert.equal(released.length, calls * 10, "earlier chunks only");
      if (++calls === 2) throw new SvcError("AccessDenied", "bad second chunk");
    },
  });
  await assert.rejects(async () => {
    for await (const piece of stream) released.push(...piece);
  }, /bad second chunk/);
  assert.deepEqual(released, [...bytes(10, 1)]);
});

Deno.test("a throwing onTrailers errors the stream instead of closing it", async () => {
  const body = encodeChunked([bytes(3)], { trailers: [["x-amz-checksum-crc32", "AAAAAA=="]] });
  const { stream, trailers } = decodeAwsChunked(streamOf([body]), {
    ...UNSIGNED_TRAILER,
    onTrailers: () => {
      throw new SvcError("BadDigest", "checksum mismatch");
    },
  });
  await assert.rejects(async () => {
    for await (const _ of stream) { /* drain */ }
  }, /checksum mismatch/);
  await assert.rejects(trailers, /checksum mismatch/);
});

const LONG = "f".repeat(MAX_LINE + 10);
const MALFORMED: [string, AwsChunkedOptions, string | Uint8Array, RegExp][] = [
  ["bad hex", UNSIGNED_TRAILER, "zz\r\nab\r\n0\r\n\r\n", /not a hexadecimal/],
  ["empty size line", UNSIGNED_TRAILER, "\r\n0\r\n\r\n", /not a hexadecimal/],
  ["space before extension", SIGNED, `3 ;chunk-signature=${SIG}\r\nabc\r\n`, /other than ;chunk/],
  ["other extension", UNSIGNED_TRAILER, "3;foo=bar\r\nabc\r\n0\r\n\r\n", /other than ;chunk/],
  ["bare LF line", UNSIGNED_TRAILER, "3\nabc\r\n0\r\n\r\n", /does not end with CRLF/],
  ["missing CRLF after data", UNSIGNED_TRAILER, "3\r\nabcd\r\n0\r\n\r\n", /not followed by CRLF/],
  ["LF only after data", UNSIGNED_TRAILER, "3\r\nabc\n0\r\n\r\n", /not followed by CRLF/],
  ["truncated in data", UNSIGNED_TRAILER, "5\r\nabc", /ended before its end/],
  ["truncated in header", UNSIGNED_TRAILER, "3\r\nabc\r\n0", /ended before its end/],
  [
    "no final CRLF",
    UNSIGNED_TRAILER,
    "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AA==\r\n",
    /ended before/,
  ],
  ["empty input", UNSIGNED_TRAILER, "", /ended before its end/],
  ["data after the end", UNSIGNED_TRAILER, "3\r\nabc\r\n0\r\n\r\nX", /data after the end/],
  [
    "longer than decoded length",
    { ...UNSIGNED_TRAILER, decodedLength: 2 },
    "3\r\nabc\r\n0\r\n\r\n",
    /longer than/,
  ],
  [
    "shorter than decoded length",
    { ...UNSIGNED_TRAILER, decodedLength: 4 },
    "3\r\nabc\r\n0\r\n\r\n",
    /shorter than/,
  ],
  ["signed without signature", SIGNED, "3\r\nabc\r\n0\r\n\r\n", /chunk-signature is missing/],
  [
    "final chunk without signature",
    SIGNED,
    `3;chunk-signature=${SIG}\r\nabc\r\n0\r\n\r\n`,
    /missing/,
  ],
  [
    "unsigned with signature",
    UNSIGNED_TRAILER,
    `3;chunk-signature=${SIG}\r\nabc\r\n0\r\n\r\n`,
    /present in an unsigned/,
  ],
  [
    "short signature",
    SIGNED,
    `3;chunk-signature=${SIG.slice(1)}\r\nabc\r\n`,
    /signature is malformed/,
  ],
  ["uppercase signature", SIGNED, `3;chunk-signature=${SIG.toUpperCase()}\r\nabc\r\n`, /malformed/],
  [
    "trailer in non-trailer variant",
    SIGNED,
    `0;chunk-signature=${SIG}\r\nx-amz-checksum-crc32:AA==\r\n\r\n`,
    /without trailer/,
  ],
  [
    "missing trailer signature",
    SIGNED_TRAILER,
    `0;chunk-signature=${SIG}\r\nx-amz-checksum-crc32:AA==\r\n\r\n`,
    /trailer-signature is missing/,
  ],
  [
    "trailer signature unsigned",
    UNSIGNED_TRAILER,
    `0\r\nx-amz-trailer-signature:${SIG}\r\n\r\n`,
    /in an unsigned/,
  ],
  [
    "trailer signature not last",
    SIGNED_TRAILER,
    `0;chunk-signature=${SIG}\r\nx-amz-trailer-signature:${SIG}\r\na:b\r\n\r\n`,
    /not the last/,
  ],
  [
    "bad trailer signature",
    SIGNED_TRAILER,
    `0;chunk-signature=${SIG}\r\na:b\r\nx-amz-trailer-signature:zz\r\n\r\n`,
    /trailer signature is malformed/,
  ],
  ["duplicate trailer", UNSIGNED_TRAILER, "0\r\na:1\r\nA:2\r\n\r\n", /appears twice/],
  [
    "trailer without colon",
    UNSIGNED_TRAILER,
    "0\r\nx-amz-checksum-crc32\r\n\r\n",
    /not name:value/,
  ],
  ["trailer with empty name", UNSIGNED_TRAILER, "0\r\n:x\r\n\r\n", /not name:value/],
  ["trailer with control char", UNSIGNED_TRAILER, "0\r\na:b\x01c\r\n\r\n", /not name:value/],
  ["oversized size line", UNSIGNED_TRAILER, `${LONG}\r\n`, /longer than 4096/],
  ["oversized line without LF", UNSIGNED_TRAILER, LONG, /longer than 4096/],
  ["oversized trailer line", UNSIGNED_TRAILER, `0\r\na:${LONG}\r\n\r\n`, /longer than 4096/],
  ["chunk size overflow", UNSIGNED_TRAILER, "fffffffffffffffff\r\n", /too large/],
  [
    "chunk too large to hold",
    { ...SIGNED, onChunk: () => {}, maxBufferedChunk: 2 },
    `3;chunk-signature=${SIG}\r\nabc\r\n`,
    /exceeds the 2 bytes/,
  ],
];

for (const [name, options, body, message] of MALFORMED) {
  Deno.test(`malformed: ${name} → IncompleteBody`, async () => {
    const raw = typeof body === "string" ? enc.encode(body) : body;
    for (const parts of [[raw], pieces(raw, Array.from({ length: raw.length }, (_, i) => i))]) {
      const { stream, trailers } = decodeAwsChunked(streamOf(parts), options);
      await assert.rejects(
        async () => {
          for await (const _ of stream) { /* drain */ }
        },
        (err: unknown) => {
          assert.ok(err instanceof SvcError, String(err));
          assert.equal(err.code, "IncompleteBody");
          assert.match(err.message, message);
          return true;
        },
      );
      await assert.rejects(trailers, SvcError);
    }
  });
}

Deno.test("a failing source becomes IncompleteBody with the cause kept", async () => {
  const cause = new Error("connection reset");
  await assert.rejects(decode([enc.encode("5\r\nab")], UNSIGNED_TRAILER, cause), (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, "IncompleteBody");
    assert.equal(err.cause, cause);
    return true;
  });
});

Deno.test("cancelling the decoded stream cancels the source", async () => {
  let cancelled: unknown;
  const source = new ReadableStream<Uint8Array>({
    pull: (c) => c.enqueue(enc.encode("1\r\nx\r\n")),
    cancel: (reason) => void (cancelled = reason),
  });
  const { stream, trailers } = decodeAwsChunked(source, UNSIGNED_TRAILER);
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel("client gone");
  assert.equal(cancelled, "client gone");
  await assert.rejects(trailers);
});

Deno.test("invalid decodedLength is a programming error", () => {
  assert.throws(() => decodeAwsChunked(streamOf([]), { ...SIGNED, decodedLength: -1 }), TypeError);
});

Deno.test({
  name: "decodes what @aws-sdk/client-s3 really sends for a streaming PutObject",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const payload = bytes(200_000, 5);
    const results: { data: Uint8Array; trailers: Map<string, string>; headers: Headers }[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const mode = streamingMode(req.headers.get("x-amz-content-sha256") ?? "");
      assert.ok(mode, "the SDK sent an aws-chunked body");
      const decodedLength = Number(req.headers.get("x-amz-decoded-content-length"));
      const { stream, trailers } = decodeAwsChunked(req.body!, { ...mode, decodedLength });
      const parts: Uint8Array[] = [];
      for await (const piece of stream) parts.push(piece);
      results.push({ data: concat(parts), trailers: await trailers, headers: req.headers });
      return new Response(null, { headers: { etag: '"0"' } });
    });
    const client = new S3Client({
      endpoint: `http://127.0.0.1:${server.addr.port}`,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" },
    });
    try {
      // A web ReadableStream body fails inside the SDK on Deno ("Unable to calculate hash for
      // flowing readable stream"), so the streaming body is a Node Readable, as Node users send.
      const body = Readable.from([payload.subarray(0, 70_000), payload.subarray(70_000)]);
      await client.send(
        new PutObjectCommand({
          Bucket: "b",
          Key: "k",
          Body: body,
          ContentLength: payload.length,
        }),
      );
    } finally {
      client.destroy();
      await server.shutdown();
    }
    assert.equal(results.length, 1);
    const [{ data, trailers, headers }] = results;
    assert.equal(headers.get("content-encoding"), "aws-chunked");
    assert.equal(headers.get("x-amz-content-sha256"), "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    assert.deepEqual(data, payload);
    const trailerName = headers.get("x-amz-trailer")!;
    const checksum = ChecksumAccumulator.forHeader(trailerName)!;
    checksum.update(data);
    assert.equal(trailers.get(trailerName), checksum.digestBase64());
  },
});

Deno.test({
  name: "throughput: 1 GiB of 64 KiB chunks in 16 KiB reads (set SVC_BENCH=1)",
  ignore: !Deno.env.get("SVC_BENCH"),
  fn: async () => {
    const chunk = bytes(65536);
    const frames = 16; // 1 MiB of payload per pattern, repeated 1024 times
    const pattern = encodeChunked(Array(frames).fill(chunk)).subarray(0, -5); // drop "0\r\n\r\n"
    const total = 1024 * frames * chunk.length;
    for (const mode of ["source only", "pass-through", "with onChunk"]) {
      let round = 0;
      let offset = 0;
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (round === 1024) {
            controller.enqueue(enc.encode("0\r\n\r\n"));
            return controller.close();
          }
          const end = Math.min(offset + 16384, pattern.length);
          controller.enqueue(pattern.slice(offset, end)); // a fresh buffer, as a socket read gives
          offset = end === pattern.length ? 0 : end;
          if (offset === 0) round++;
        },
      }, { highWaterMark: 0 });
      const options: AwsChunkedOptions = { signed: false, trailer: true, decodedLength: total };
      if (mode === "with onChunk") options.onChunk = () => {};
      const start = performance.now();
      let n = 0;
      const output = mode === "source only" ? source : decodeAwsChunked(source, options).stream;
      for await (const piece of output) n += piece.length;
      const seconds = (performance.now() - start) / 1000;
      if (mode !== "source only") assert.equal(n, total);
      const rss = Deno.readTextFileSync("/proc/self/status").match(/VmHWM:\s+(\d+)/)?.[1];
      console.log(
        `${mode}: ${(n / seconds / 1e6).toFixed(0)} MB/s, ` +
          `peak RSS ${Math.round(Number(rss) / 1024)} MB`,
      );
    }
  },
});
