import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { Readable } from "node:stream";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { SvcError } from "../lib/errors.ts";
import type { AwsChunkedOptions } from "./aws-chunked.ts";
import { decodeAwsChunked, streamingMode } from "./aws-chunked.ts";
import { MAX_LINE } from "./aws-chunked-parser.ts";
import { ChecksumAccumulator } from "./checksums/checksums.ts";

const enc = new TextEncoder();
const SIG = "a".repeat(64);
const ECDSA_SIG = "3045" + "ab".repeat(69) + "*".repeat(2); // 142 hex digits, padded to 144

function concat(parts: (Uint8Array | string)[]): Uint8Array {
  const bytes = parts.map((p) => typeof p === "string" ? enc.encode(p) : p);
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  bytes.reduce((at, b) => (out.set(b, at), at + b.length), 0);
  return out;
}

interface EncodeOptions {
  signatures?: string[]; // one per chunk, the final empty chunk included
  trailers?: [string, string][];
  trailerSignature?: string;
}

/** Writes an aws-chunked body the way the SDKs do (see the format in aws-chunked.ts). */
function encodeChunked(chunks: Uint8Array[], o: EncodeOptions = {}): Uint8Array {
  const parts: (Uint8Array | string)[] = [];
  [...chunks, new Uint8Array(0)].forEach((chunk, i) => {
    const sig = o.signatures ? `;chunk-signature=${o.signatures[i]}` : "";
    parts.push(`${chunk.length.toString(16)}${sig}\r\n`);
    if (chunk.length > 0) parts.push(chunk, "\r\n");
  });
  for (const [name, value] of o.trailers ?? []) parts.push(`${name}:${value}\r\n`);
  if (o.trailerSignature) parts.push(`x-amz-trailer-signature:${o.trailerSignature}\r\n`);
  parts.push("\r\n");
  return concat(parts);
}

/** Cuts bytes at the given offsets into fresh buffers, as separate network reads would be. */
function pieces(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const ends = [...cuts, bytes.length];
  return [0, ...cuts].map((start, i) => bytes.slice(start, ends[i]));
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

async function drain(stream: ReadableStream<Uint8Array>, into: number[] = []): Promise<void> {
  for await (const piece of stream) for (const byte of piece) into.push(byte);
}

function bytes(n: number, seed = 1): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

const UNSIGNED_TRAILER = { signed: false, trailer: true } as const;
const SIGNED = { signed: true, trailer: false } as const;
const SIGNED_TRAILER = { signed: true, trailer: true } as const;
const [U, S, ST]: AwsChunkedOptions[] = [UNSIGNED_TRAILER, SIGNED, SIGNED_TRAILER];
const CS = `;chunk-signature=${SIG}`;
const TS = `x-amz-trailer-signature:${SIG}`;

Deno.test("streamingMode maps every x-amz-content-sha256 streaming value", () => {
  const table: [string, string | undefined][] = [
    ["STREAMING-UNSIGNED-PAYLOAD-TRAILER", "false true false"],
    ["STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "true false false"],
    ["STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "true true false"],
    ["STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", "true false true"],
    ["STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER", "true true true"],
    ["UNSIGNED-PAYLOAD", undefined],
    ["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", undefined],
  ];
  for (const [value, expected] of table) {
    const mode = streamingMode(value);
    assert.equal(mode && `${mode.signed} ${mode.trailer} ${mode.ecdsa}`, expected, value);
  }
});

Deno.test("unsigned trailer body as the JS SDK writes it, passed through as views", async () => {
  const [a, b] = [bytes(30000), bytes(40000, 9)];
  const body = encodeChunked([a, b], { trailers: [["x-amz-checksum-crc32", "n+HHwQ=="]] });
  for (const onChunk of [undefined, () => {}]) {
    const parts = pieces(body, [100, 16384, 30010, 50000]);
    const got = await decode(parts, { ...U, decodedLength: 70000, onChunk });
    assert.deepEqual(got.data, concat([a, b]));
    assert.deepEqual([...got.trailers], [["x-amz-checksum-crc32", "n+HHwQ=="]]);
    // No copies: every output piece is a view into one of the reads.
    assert.ok(got.views.every((v) => parts.some((p) => p.buffer === v.buffer)));
  }
});

Deno.test("AWS sigv4-streaming example: onChunk can verify every chunk signature", async () => {
  // The published example: 66560 'a' bytes in chunks of 65536 and 1024, with its signatures.
  const published = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
  ];
  const data = new Uint8Array(66560).fill(97);
  const halves = [data.subarray(0, 65536), data.subarray(65536)];
  const body = encodeChunked(halves, { signatures: published });
  assert.equal(body.length, 66824, "the example's Content-Length");
  let key: string | Uint8Array = "AWS4wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  for (const part of ["20130524", "us-east-1", "s3", "aws4_request"]) {
    key = createHmac("sha256", key).update(part).digest();
  }
  const scope = "20130524/us-east-1/s3/aws4_request";
  const empty = createHash("sha256").digest("hex");
  /** A chunk-signature chain checker, as the SigV4 layer will build on onChunk. */
  const verifier = (seen: number[]) => {
    let previous = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"; // seed
    return (signature: string | undefined, views: readonly Uint8Array[]) => {
      const hash = createHash("sha256");
      for (const view of views) hash.update(view);
      const toSign =
        `AWS4-HMAC-SHA256-PAYLOAD\n20130524T000000Z\n${scope}\n${previous}\n${empty}\n`;
      previous = createHmac("sha256", key).update(toSign + hash.digest("hex")).digest("hex");
      if (signature !== previous) throw new SvcError("AccessDenied", "chunk signature mismatch");
      seen.push(views.reduce((n, v) => n + v.length, 0));
    };
  };
  const seen: number[] = [];
  const split = pieces(body, [1000, 16384, 40000, 65620, 65700, 66800]);
  const got = await decode(split, { ...SIGNED, decodedLength: 66560, onChunk: verifier(seen) });
  assert.deepEqual(seen, [65536, 1024, 0]);
  assert.deepEqual(got.data, data);
  const tampered = body.slice();
  tampered[65800] ^= 1; // one byte of the second chunk's data
  const seenTampered: number[] = [];
  const onChunk = verifier(seenTampered);
  await assert.rejects(decode([tampered], { ...SIGNED, onChunk }), /chunk signature mismatch/);
  assert.deepEqual(seenTampered, [65536]);
});

Deno.test("signed trailer body: trailer signature reaches onTrailers, not the map", async () => {
  const data = bytes(5000);
  const trailers: [string, string][] = [["X-Amz-Checksum-CRC32C", " abc= "]];
  const signed = { signatures: [SIG, "b".repeat(64)], trailerSignature: "c".repeat(64) };
  const body = encodeChunked([data], { ...signed, trailers });
  let seen: unknown;
  const onTrailers = (t: ReadonlyMap<string, string>, sig?: string) => void (seen = [...t, sig]);
  const got = await decode([body], { ...SIGNED_TRAILER, onTrailers });
  assert.deepEqual(got.data, data);
  assert.deepEqual(seen, [["x-amz-checksum-crc32c", "abc="], "c".repeat(64)]);
  assert.deepEqual([...got.trailers], [["x-amz-checksum-crc32c", "abc="]]);
});

Deno.test("ECDSA (SigV4a) chunk signatures are accepted and unpadded", async () => {
  const signatures: (string | undefined)[] = [];
  const body = encodeChunked([bytes(10)], { signatures: [ECDSA_SIG, ECDSA_SIG] });
  const onChunk = (s: string | undefined) => void signatures.push(s);
  assert.equal((await decode([body], { ...SIGNED, ecdsa: true, onChunk })).data.length, 10);
  assert.deepEqual(signatures, Array(2).fill(ECDSA_SIG.replace(/\*+$/, "")));
  await assert.rejects(decode([body], SIGNED), /chunk signature is malformed/);
});

Deno.test("empty bodies in every variant, and uppercase hex sizes (the Rust SDK's)", async () => {
  const trailer = "x-amz-checksum-crc32:AAAAAA==\r\n";
  const cases: [AwsChunkedOptions, string, number][] = [
    [U, "0\r\n\r\n", 0],
    [U, `0\r\n${trailer}\r\n`, 0],
    [S, `0${CS}\r\n\r\n`, 0],
    [ST, `0${CS}\r\n\r\n`, 0],
    [ST, `0${CS}\r\n${trailer}${TS}\r\n\r\n`, 0],
    [U, `0A\r\n0123456789\r\n0\r\n\r\n`, 10],
  ];
  for (const [options, body, length] of cases) {
    const got = await decode([enc.encode(body)], { ...options, decodedLength: length });
    assert.equal(got.data.length, length, body);
  }
});

Deno.test("every split point, one byte at a time, and random pieces decode the same", async () => {
  const chunks = [bytes(7), bytes(300, 2), bytes(1, 3)];
  const expected = concat(chunks);
  const signed = { signatures: Array(4).fill(SIG), trailerSignature: SIG };
  const trailers: [string, string][] = [["x-amz-checksum-sha256", "x/y+=="]];
  const samples: [AwsChunkedOptions, Uint8Array][] = [
    [UNSIGNED_TRAILER, encodeChunked(chunks, { trailers })],
    [SIGNED_TRAILER, encodeChunked(chunks, { ...signed, trailers })],
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

Deno.test("with onChunk nothing of a chunk is released before onChunk resolves", async () => {
  const signatures = Array(4).fill(SIG);
  const body = encodeChunked([bytes(10, 1), bytes(10, 2), bytes(10, 3)], { signatures });
  const released: number[] = [];
  let calls = 0;
  const { stream } = decodeAwsChunked(streamOf([body]), {
    ...SIGNED,
    onChunk: async () => {
      await new Promise((r) => setTimeout(r, 1));
      // Earlier chunks may still be gathered for one output piece; none of this one is out.
      assert.ok(released.length <= calls * 10, "earlier chunks only");
      if (++calls === 2) throw new SvcError("AccessDenied", "bad second chunk");
    },
  });
  await assert.rejects(drain(stream, released), /bad second chunk/);
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
  await assert.rejects(drain(stream), /checksum mismatch/);
  await assert.rejects(trailers, /checksum mismatch/);
});

const LONG = "f".repeat(MAX_LINE + 10);
const HOLD2 = { ...SIGNED, onChunk: () => {}, maxBufferedChunk: 2 };
const MALFORMED: [string, AwsChunkedOptions, string, RegExp][] = [
  ["bad hex", U, "zz\r\nab\r\n0\r\n\r\n", /not a hexadecimal/],
  ["empty size line", U, "\r\n0\r\n\r\n", /not a hexadecimal/],
  ["space before extension", S, `3 ${CS}\r\nabc\r\n`, /other than ;chunk/],
  ["other extension", U, "3;foo=bar\r\nabc\r\n0\r\n\r\n", /other than ;chunk/],
  ["bare LF line", U, "3\nabc\r\n0\r\n\r\n", /does not end with CRLF/],
  ["missing CRLF after data", U, "3\r\nabcd\r\n0\r\n\r\n", /not followed by CRLF/],
  ["LF only after data", U, "3\r\nabc\n0\r\n\r\n", /not followed by CRLF/],
  ["truncated in data", U, "5\r\nabc", /ended before its end/],
  ["truncated in header", U, "3\r\nabc\r\n0", /ended before its end/],
  ["no final CRLF", U, "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AA==\r\n", /ended before/],
  ["empty input", U, "", /ended before its end/],
  ["data after the end", U, "3\r\nabc\r\n0\r\n\r\nX", /data after the end/],
  ["longer than decoded length", { ...U, decodedLength: 2 }, "3\r\nabc\r\n0\r\n\r\n", /longer/],
  ["shorter than decoded length", { ...U, decodedLength: 4 }, "3\r\nabc\r\n0\r\n\r\n", /shorter/],
  ["signed without signature", S, "3\r\nabc\r\n0\r\n\r\n", /chunk-signature is missing/],
  ["final chunk without signature", S, `3${CS}\r\nabc\r\n0\r\n\r\n`, /signature is missing/],
  ["unsigned with signature", U, `3${CS}\r\nabc\r\n0\r\n\r\n`, /present in an unsigned/],
  ["short signature", S, `3${CS.slice(1)}\r\nabc\r\n`, /other than ;chunk/],
  ["short signature value", S, `3${CS.slice(0, -1)}\r\nabc\r\n`, /signature is malformed/],
  ["uppercase signature", S, `3${CS.toUpperCase()}\r\nabc\r\n`, /other than ;chunk/],
  ["uppercase hex digits", S, `3;chunk-signature=${"A".repeat(64)}\r\n`, /is malformed/],
  ["trailer in non-trailer variant", S, `0${CS}\r\nx-amz-checksum-crc32:AA==\r\n\r\n`, /without/],
  ["missing trailer signature", ST, `0${CS}\r\nx-amz-checksum-crc32:AA==\r\n\r\n`, /missing/],
  ["trailer signature unsigned", U, `0\r\n${TS}\r\n\r\n`, /in an unsigned/],
  ["trailer signature not last", ST, `0${CS}\r\n${TS}\r\na:b\r\n\r\n`, /not the last/],
  ["bad trailer signature", ST, `0${CS}\r\na:b\r\n${TS}x\r\n\r\n`, /trailer signature is/],
  ["duplicate trailer", U, "0\r\na:1\r\nA:2\r\n\r\n", /appears twice/],
  ["trailer without colon", U, "0\r\nx-amz-checksum-crc32\r\n\r\n", /not name:value/],
  ["trailer with empty name", U, "0\r\n:x\r\n\r\n", /not name:value/],
  ["trailer with control char", U, "0\r\na:b\x01c\r\n\r\n", /not name:value/],
  ["oversized size line", U, `${LONG}\r\n`, /longer than 4096/],
  ["oversized line without LF", U, LONG, /longer than 4096/],
  ["oversized trailer line", U, `0\r\na:${LONG}\r\n\r\n`, /longer than 4096/],
  ["chunk size overflow", U, "fffffffffffffffff\r\n", /too large/],
  ["chunk too large to hold", HOLD2, `3${CS}\r\nabc\r\n`, /exceeds the 2 bytes/],
];

for (const [name, options, body, message] of MALFORMED) {
  Deno.test(`malformed: ${name} → IncompleteBody`, async () => {
    const raw = enc.encode(body);
    for (const parts of [[raw], pieces(raw, Array.from({ length: raw.length }, (_, i) => i))]) {
      const { stream, trailers } = decodeAwsChunked(streamOf(parts), options);
      await assert.rejects(drain(stream), (err: unknown) => {
        assert.ok(err instanceof SvcError && err.code === "IncompleteBody", String(err));
        return assert.match(err.message, message) ?? true;
      });
      await assert.rejects(trailers, SvcError);
    }
  });
}

Deno.test("a failing source is IncompleteBody with its cause; bad options throw", async () => {
  const cause = new Error("connection reset");
  const failed = await decode([enc.encode("5\r\nab")], UNSIGNED_TRAILER, cause).catch((e) => e);
  assert.ok(failed instanceof SvcError && failed.code === "IncompleteBody");
  assert.equal(failed.cause, cause);
  assert.throws(() => decodeAwsChunked(streamOf([]), { ...S, decodedLength: 0.5 }), TypeError);
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

Deno.test({
  name: "decodes what @aws-sdk/client-s3 really sends for a streaming PutObject",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const payload = bytes(200_000, 5);
    let received: { data: number[]; trailers: Map<string, string>; headers: Headers } | undefined;
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const mode = streamingMode(req.headers.get("x-amz-content-sha256") ?? "");
      const decodedLength = Number(req.headers.get("x-amz-decoded-content-length"));
      const { stream, trailers } = decodeAwsChunked(req.body!, { ...mode!, decodedLength });
      const data: number[] = [];
      await drain(stream, data);
      received = { data, trailers: await trailers, headers: req.headers };
      return new Response(null, { headers: { etag: '"0"' } });
    });
    const endpoint = `http://127.0.0.1:${server.addr.port}`;
    const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" };
    const client = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: "us-east-1",
      credentials,
    });
    try {
      // A web ReadableStream body fails inside the SDK on Deno ("Unable to calculate hash for
      // flowing readable stream"), so the streaming body is a Node Readable, as Node users send.
      const body = Readable.from([payload.subarray(0, 70_000), payload.subarray(70_000)]);
      const put = { Bucket: "b", Key: "k", Body: body, ContentLength: payload.length };
      await client.send(new PutObjectCommand(put));
    } finally {
      client.destroy();
      await server.shutdown();
    }
    const { data, trailers, headers } = received!;
    assert.equal(headers.get("content-encoding"), "aws-chunked");
    assert.equal(headers.get("x-amz-content-sha256"), "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    assert.deepEqual(new Uint8Array(data), payload);
    const checksum = ChecksumAccumulator.forHeader(headers.get("x-amz-trailer")!)!;
    checksum.update(payload);
    assert.equal(trailers.get("x-amz-checksum-crc32"), checksum.digestBase64());
  },
});

Deno.test({
  name: "throughput: 1 GiB of 64 KiB chunks in 16 KiB reads (set SVC_BENCH=1)",
  ignore: !Deno.env.get("SVC_BENCH"),
  fn: async () => {
    // 16 frames (1 MiB of payload) cut into 16 KiB reads that straddle frames, sent 1024 times.
    const pattern = encodeChunked(Array(16).fill(bytes(65536))).subarray(0, -5);
    const reads = pieces(pattern, Array.from({ length: 64 }, (_, i) => (i + 1) << 14));
    const [total, count] = [1024 * 16 * 65536, 1024 * reads.length];
    for (const mode of ["source only", "pass-through", "with onChunk"]) {
      let i = 0;
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          // A fresh buffer per read, as a socket gives; then the final chunk, then the end.
          if (i < count) controller.enqueue(reads[i % reads.length].slice());
          else if (i === count) controller.enqueue(encodeChunked([]));
          else controller.close();
          i++;
        },
      }, { highWaterMark: 0 });
      const onChunk = mode === "with onChunk" ? () => {} : undefined;
      const options = { ...UNSIGNED_TRAILER, decodedLength: total, onChunk };
      const start = performance.now();
      let n = 0;
      const output = mode === "source only" ? source : decodeAwsChunked(source, options).stream;
      for await (const piece of output) n += piece.length;
      const rate = n / (performance.now() - start) / 1e3;
      if (mode !== "source only") assert.equal(n, total);
      const rss = Deno.readTextFileSync("/proc/self/status").match(/VmHWM:\s+(\d+)/)?.[1];
      console.log(`${mode}: ${rate.toFixed(0)} MB/s, peak RSS ${Number(rss) >> 10} MB`);
    }
  },
});

Deno.test("a read holding many tiny chunks comes out as one piece, large chunks as views", async () => {
  const tiny = Array.from({ length: 1000 }, (_, i) => bytes(1, i));
  const body = encodeChunked(tiny, { trailers: [] });
  for (const onChunk of [undefined, () => {}]) {
    const got = await decode([body], { ...U, decodedLength: 1000, onChunk });
    assert.deepEqual(got.data, concat(tiny));
    assert.equal(got.views.length, 1, "one output piece for the one read");
  }
  const large = [bytes(5000, 1), bytes(6000, 2)];
  const parts = [encodeChunked(large, { trailers: [] })];
  const got = await decode(parts, { ...U, decodedLength: 11000 });
  assert.equal(got.views.length, 2);
  assert.ok(got.views.every((v) => v.buffer === parts[0].buffer), "large chunks are not copied");
});
