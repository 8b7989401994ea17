import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import { type FormDataOptions, type FormPart, readFormData } from "./form-data.ts";
import { formBoundary } from "./form-part-headers.ts";
import { rejectsWith } from "../testing/svc-error-assertions.ts";

const utf8 = new TextEncoder();
const BOUNDARY = "----svcBoundary7MA4YWxkTrZu0gW";

type Part = { name: string; value: string | Uint8Array; filename?: string; type?: string };

function multipart(parts: Part[], options: { boundary?: string; close?: boolean } = {}) {
  const boundary = options.boundary ?? BOUNDARY;
  const pieces: Uint8Array[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    head += "\r\n";
    if (part.type) head += `Content-Type: ${part.type}\r\n`;
    pieces.push(utf8.encode(head + "\r\n"));
    pieces.push(typeof part.value === "string" ? utf8.encode(part.value) : part.value);
    pieces.push(utf8.encode("\r\n"));
  }
  if (options.close !== false) pieces.push(utf8.encode(`--${boundary}--\r\n`));
  return concatAll(pieces);
}

function concatAll(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A source that hands out `bytes` in pieces whose ends are at `cuts` (fresh buffers). */
function source(bytes: Uint8Array, cuts: number[] = []): ReadableStream<Uint8Array> {
  const ends = [...new Set([...cuts.filter((c) => c > 0 && c < bytes.length), bytes.length])]
    .sort((a, b) => a - b);
  let start = 0, index = 0;
  return new ReadableStream({
    pull(controller) {
      if (index >= ends.length || bytes.length === 0) return controller.close();
      controller.enqueue(bytes.slice(start, ends[index]));
      start = ends[index++];
    },
  });
}

function everyByte(bytes: Uint8Array): number[] {
  return Array.from({ length: bytes.length }, (_, i) => i);
}

/** Deterministic pseudo-random cuts, so a failure can be replayed. */
function randomCuts(length: number, seed: number, count: number): number[] {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: count }, () => Math.floor(next() * length));
}

interface Read {
  fields: [string, string][];
  file?: { name: string; filename: string | null; contentType: string | null; bytes: Uint8Array };
}

async function readAll(
  stream: ReadableStream<Uint8Array>,
  options?: FormDataOptions,
  boundary = BOUNDARY,
): Promise<Read> {
  const out: Read = { fields: [] };
  for await (const part of readFormData(stream, boundary, options)) {
    if (part.kind === "field") out.fields.push([part.name, part.value]);
    else {
      const bytes = new Uint8Array(await new Response(part.body).arrayBuffer());
      out.file = { name: part.name, filename: part.filename, contentType: part.contentType, bytes };
    }
  }
  return out;
}

const MALFORMED = /not well-formed multipart\/form-data/;

const SAMPLE: Part[] = [
  { name: "key", value: "user/${filename}" },
  { name: "X-Amz-Meta-Tag", value: "é ünïcode, 日本" },
  { name: "empty", value: "" },
  {
    name: "file",
    value: new Uint8Array([1, 2, 3, 13, 10, 45, 45, 4]),
    filename: "a.bin",
    type: "image/png",
  },
];

Deno.test("fields and file come out intact, whole or split at every byte", async () => {
  const body = multipart(SAMPLE);
  for (const cuts of [[], everyByte(body), [1], [body.length - 1]]) {
    const read = await readAll(source(body, cuts));
    assert.deepEqual(read.fields, [
      ["key", "user/${filename}"],
      ["X-Amz-Meta-Tag", "é ünïcode, 日本"],
      ["empty", ""],
    ]);
    assert.equal(read.file?.name, "file");
    assert.equal(read.file?.filename, "a.bin");
    assert.equal(read.file?.contentType, "image/png");
    assert.deepEqual(read.file?.bytes, new Uint8Array([1, 2, 3, 13, 10, 45, 45, 4]));
  }
});

Deno.test("delimiter near-misses inside the file survive random splits", async () => {
  // Everything here is a prefix of the delimiter or differs from it by one byte.
  const honest = concatAll([
    utf8.encode("\r\n--"),
    utf8.encode(`\r\n--${BOUNDARY.slice(0, -1)}`),
    new Uint8Array([0, 255, 13, 10, 13, 13, 10, 45, 45]),
    new Uint8Array(5000).fill(13),
    utf8.encode(`\r\n-${BOUNDARY}\r\n`),
  ]);
  const body = multipart([{ name: "a", value: "1" }, {
    name: "file",
    value: honest,
    filename: "x",
  }]);
  for (let seed = 1; seed <= 200; seed++) {
    const cuts = randomCuts(body.length, seed, 1 + (seed % 40));
    const read = await readAll(source(body, cuts));
    assert.deepEqual(read.file?.bytes, honest, `seed ${seed}`);
    assert.deepEqual(read.fields, [["a", "1"]]);
  }
  const oneByte = await readAll(source(body, everyByte(body)));
  assert.deepEqual(oneByte.file?.bytes, honest);
});

Deno.test("empty file, file without filename, and parts after the file are ignored", async () => {
  const body = multipart([
    { name: "key", value: "k" },
    { name: "file", value: "" },
    { name: "submit", value: "Upload" },
  ]);
  for (const cuts of [[], everyByte(body)]) {
    const read = await readAll(source(body, cuts));
    assert.deepEqual(read.fields, [["key", "k"]]);
    assert.equal(read.file?.filename, null);
    assert.equal(read.file?.bytes.length, 0);
  }
});

Deno.test("no file part: only the fields", async () => {
  const read = await readAll(source(multipart([{ name: "key", value: "k" }])));
  assert.deepEqual(read, { fields: [["key", "k"]] });
});

Deno.test("the file field name is matched case-insensitively and is configurable", async () => {
  const body = multipart([{ name: "File", value: "x", filename: "f" }]);
  assert.equal((await readAll(source(body))).file?.name, "File");
  const other = await readAll(source(body), { fileField: "upload" });
  assert.deepEqual(other.fields, [["File", "x"]]);
});

Deno.test("preamble, transport padding and epilogue are accepted", async () => {
  const text = `This is a preamble\r\n--${BOUNDARY}   \t\r\n` +
    `content-disposition: form-data; name=key\r\n\r\nv\r\n--${BOUNDARY}\r\n` +
    `Content-Disposition: form-data; name="file"; filename="C:\\dir\\a \\"q\\".txt"\r\n\r\n` +
    `data\r\n--${BOUNDARY}--\r\nepilogue that is never read`;
  const read = await readAll(source(utf8.encode(text)));
  assert.deepEqual(read.fields, [["key", "v"]]);
  assert.equal(read.file?.filename, 'C:\\dir\\a "q".txt');
  assert.equal(new TextDecoder().decode(read.file?.bytes), "data");
});

Deno.test("what FormData serialises is read back", async () => {
  const form = new FormData();
  form.append("key", "a/${filename}");
  form.append("Content-Type", "text/plain");
  const content = crypto.getRandomValues(new Uint8Array(65_536));
  form.append("file", new Blob([content], { type: "application/x-test" }), "name with space.bin");
  const request = new Request("http://x/", { method: "POST", body: form });
  const boundary = formBoundary(request.headers.get("content-type"));
  const read = await readAll(request.body!, {}, boundary);
  assert.deepEqual(read.fields, [["key", "a/${filename}"], ["Content-Type", "text/plain"]]);
  assert.equal(read.file?.filename, "name with space.bin");
  assert.equal(read.file?.contentType, "application/x-test");
  assert.deepEqual(read.file?.bytes, content);
});

Deno.test("malformed bodies are refused", async () => {
  const good = multipart(SAMPLE);
  const text = new TextDecoder().decode(good);
  const cases: [string, Uint8Array][] = [
    ["no closing delimiter", multipart(SAMPLE, { close: false })],
    ["truncated in the file", good.subarray(0, good.length - 30)],
    ["truncated in a field", good.subarray(0, 120)],
    ["no delimiter at all", utf8.encode("just some text")],
    ["empty body", new Uint8Array(0)],
    [
      "junk after a delimiter",
      utf8.encode(text.replace(`${BOUNDARY}\r\nContent`, `${BOUNDARY}x\r\nContent`)),
    ],
    [
      "no Content-Disposition",
      utf8.encode(text.replace('Content-Disposition: form-data; name="key"', "X-Other: 1")),
    ],
    ["not form-data", utf8.encode(text.replace('form-data; name="key"', 'attachment; name="key"'))],
    ["no name", utf8.encode(text.replace('name="key"', 'filename="key"'))],
    [
      "header line without colon",
      utf8.encode(
        text.replace(
          'Content-Disposition: form-data; name="key"',
          'Content-Disposition: form-data; name="key"\r\nbogus',
        ),
      ),
    ],
  ];
  for (const [label, body] of cases) {
    await rejectsWith(readAll(source(body)), "MalformedPOSTRequest", MALFORMED).catch((err) => {
      throw new Error(`${label}: ${err.message}`);
    });
  }
});

Deno.test("the file stream errors when the body breaks after the file", async () => {
  const body = utf8.encode(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nbytes\r\n--${BOUNDARY}\r\n` +
      `Content-Disposition: form-data; name="late"\r\n\r\nvalue that never ends`,
  );
  await rejectsWith(readAll(source(body)), "MalformedPOSTRequest", MALFORMED);
});

Deno.test("pre-file data is capped at 20 KiB; the file itself is not", async () => {
  const big = "x".repeat(20 * 1024);
  await rejectsWith(
    readAll(source(multipart([{ name: "policy", value: big }, { name: "file", value: "1" }]))),
    "MaxPostPreDataLengthExceeded",
  );
  // Many small fields add up.
  const many = Array.from(
    { length: 300 },
    (_, i) => ({ name: `x-ignore-${i}`, value: "y".repeat(60) }),
  );
  await rejectsWith(readAll(source(multipart(many))), "MaxPostPreDataLengthExceeded");
  // A field that never ends is refused without buffering it all.
  const endless = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(utf8.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\n\r\n`));
    },
    pull(c) {
      c.enqueue(new Uint8Array(4096).fill(65));
    },
  });
  await rejectsWith(readAll(endless), "MaxPostPreDataLengthExceeded");
  // Just under the cap, followed by a file larger than it.
  const fields = multipart([{ name: "policy", value: "p".repeat(19 * 1024) }], { close: false });
  const file = new Uint8Array(100_000).fill(7);
  const body = concatAll([fields, multipart([{ name: "file", value: file, filename: "f" }])]);
  assert.deepEqual((await readAll(source(body))).file?.bytes, file);
  // A per-field cap below the total.
  await rejectsWith(
    readAll(source(multipart([{ name: "a", value: "z".repeat(600) }])), { maxFieldBytes: 500 }),
    "MaxPostPreDataLengthExceeded",
    /"a"/,
  );
});

Deno.test("file bytes stream with backpressure and no copies of the pieces", async () => {
  const head = utf8.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\n`);
  const tail = utf8.encode(`\r\n--${BOUNDARY}--\r\n`);
  const pieceSize = 64 * 1024, pieces = 2048; // 128 MiB of content, generated on demand
  let pulled = 0;
  const handedOut = new Set<ArrayBufferLike>();
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled === 0) c.enqueue(head);
      else if (pulled <= pieces) {
        const piece = new Uint8Array(pieceSize).fill(pulled % 251);
        handedOut.add(piece.buffer);
        c.enqueue(piece);
      } else if (pulled === pieces + 1) c.enqueue(tail);
      else c.close();
      pulled++;
    },
  }, { highWaterMark: 0 });
  const parts: FormPart[] = [];
  for await (const part of readFormData(stream, BOUNDARY)) parts.push(part);
  assert.equal(parts.length, 1);
  const file = parts[0];
  assert.ok(file.kind === "file");
  const reader = file.body.getReader();
  let total = 0, chunks = 0, shared = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    chunks++;
    if (handedOut.has(value.buffer)) shared++;
    // The reader never runs far ahead of us.
    assert.ok(pulled <= chunks + 3, `pulled ${pulled} pieces for ${chunks} chunks`);
  }
  assert.equal(total, pieceSize * pieces);
  // Pieces go on whole, as views; only those after a piece of CRs (which could start a
  // delimiter) are stitched.
  assert.ok(shared >= pieces - 20, `${shared} of ${chunks} chunks share the source's buffers`);
  assert.ok(chunks <= pieces + 20, `${chunks} chunks for ${pieces} pieces`);
});

Deno.test("stopping early cancels the source", async () => {
  let cancelled = false;
  const body = multipart(SAMPLE);
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(body.slice(0, 150));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const part of readFormData(stream, BOUNDARY)) {
    assert.equal(part.kind, "field");
    break;
  }
  assert.equal(cancelled, true);
});

Deno.test("an abort wakes a stalled read, in the fields or in the file", async () => {
  for (const cut of [60, multipart(SAMPLE).length - 30]) {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(multipart(SAMPLE).slice(0, cut)),
      cancel: () => void (cancelled = true),
    });
    const controller = new AbortController();
    const reading = readAll(stream, { signal: controller.signal });
    setTimeout(() => controller.abort(new SvcError("RequestTimeout", "too slow")), 10);
    await rejectsWith(reading, "RequestTimeout");
    assert.equal(cancelled, true);
  }
});
