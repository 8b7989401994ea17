/**
 * Black-box tests of the plain PUT/GET data path as it was rebuilt for speed: bodies read from
 * the socket in large BYOB reads, md5 and sha256 hashed on two workers over a shared ring, small
 * objects committed with shared directory fsyncs and read with inline metadata calls. Speed
 * itself is measured in scripts/bench/throughput.ts (docs/BENCHMARKS.md); these tests hold the
 * results right at the sizes and concurrency where the new code paths turn.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { randomBytes, startSvc } from "./helpers/svc.ts";
import { codeOf, md5Hex } from "./helpers/assertions.ts";

const BUCKET = "datapath";
const MiB = 1024 * 1024;
const sha256Hex = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

/** PUT over a raw socket, writing the body in `piece`-byte writes (odd sizes on purpose). */
async function socketPut(
  port: number,
  path: string,
  body: Uint8Array,
  piece: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const head = [
      `PUT ${path} HTTP/1.1`,
      `host: 127.0.0.1:${port}`,
      `content-length: ${body.length}`,
      "connection: close",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      "",
      "",
    ].join("\r\n");
    const writeAll = async (bytes: Uint8Array) => {
      for (let o = 0; o < bytes.length;) o += await conn.write(bytes.subarray(o));
    };
    await writeAll(new TextEncoder().encode(head));
    for (let o = 0; o < body.length; o += piece) await writeAll(body.subarray(o, o + piece));
    const text = new TextDecoder().decode(await new Response(conn.readable).arrayBuffer());
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text };
  } finally {
    try {
      conn.close();
    } catch { /* closed with the response */ }
  }
}

Deno.test("data path: plain PUT and GET stay exact across read, hash-ring and commit paths", async (t) => {
  await using svc = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
  const url = (key: string) => `${svc.url}/${BUCKET}/${key}`;
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);

  await t.step("sizes around the inline, read-buffer and ring-slot limits", async () => {
    // 16 KiB is the smallest socket read, 1 MiB the inline-hash limit and largest read, 2 MiB a
    // ring slot, 8 MiB the whole ring; 41 MiB + 5 wraps it five times and ends mid-slot.
    const sizes = [
      0,
      1,
      4096,
      16 * 1024 - 1,
      16 * 1024 + 1,
      MiB,
      MiB + 1,
      4 * MiB + 3,
      41 * MiB + 5,
    ];
    for (const size of sizes) {
      const body = randomBytes(size);
      const key = `size-${size}`;
      const put = await socketPut(svc.port, `/${BUCKET}/${key}`, body, 300_007);
      assert.equal(put.status, 200, `PUT ${size}: ${put.text}`);
      assert.match(put.text, new RegExp(`etag: "${md5Hex(body)}"`, "i"), `ETag of ${size} bytes`);
      const got = new Uint8Array(await (await fetch(url(key))).arrayBuffer());
      assert.equal(got.length, size);
      assert.equal(sha256Hex(got), sha256Hex(body), `bytes of ${size}`);
    }
  });

  await t.step("a large body is checked against the client's sha256 and md5", async () => {
    const body = randomBytes(20 * MiB + 9);
    const good = await socketPut(svc.port, `/${BUCKET}/checked`, body, 65_537, {
      "x-amz-content-sha256": sha256Hex(body),
      "content-md5": createHash("md5").update(body).digest("base64"),
    });
    assert.equal(good.status, 200, good.text);
    const wrongSha = await socketPut(svc.port, `/${BUCKET}/wrong-sha`, body, 65_537, {
      "x-amz-content-sha256": sha256Hex(body.subarray(1)),
    });
    assert.equal(wrongSha.status, 400);
    assert.equal(
      codeOf(wrongSha.text.slice(wrongSha.text.indexOf("<"))),
      "XAmzContentSHA256Mismatch",
    );
    const wrongMd5 = await socketPut(svc.port, `/${BUCKET}/wrong-md5`, body, 65_537, {
      "content-md5": createHash("md5").update(body.subarray(1)).digest("base64"),
    });
    assert.equal(wrongMd5.status, 400);
    assert.equal(codeOf(wrongMd5.text.slice(wrongMd5.text.indexOf("<"))), "BadDigest");
    for (const refused of ["wrong-sha", "wrong-md5"]) {
      assert.equal((await fetch(url(refused))).status, 404, `${refused} was not stored`);
    }
  });

  await t.step("large PUTs at once each get their own digests", async () => {
    const bodies = [randomBytes(9 * MiB + 1), randomBytes(13 * MiB + 2), randomBytes(6 * MiB)];
    const puts = await Promise.all(
      bodies.map((body, i) => socketPut(svc.port, `/${BUCKET}/parallel-${i}`, body, 1 << 20)),
    );
    puts.forEach((put, i) => {
      assert.equal(put.status, 200, put.text);
      assert.match(put.text, new RegExp(`etag: "${md5Hex(bodies[i])}"`, "i"));
    });
  });

  await t.step(
    "concurrent small PUTs into one directory are all committed and readable",
    async () => {
      // They share directory fsyncs (group commit); each answer still means its object is there.
      const bodies = Array.from({ length: 64 }, (_, i) => randomBytes(4096 + i));
      const answers = await Promise.all(
        bodies.map((body, i) => fetch(url(`dir/obj-${i}`), { method: "PUT", body })),
      );
      for (const [i, answer] of answers.entries()) {
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get("etag"), `"${md5Hex(bodies[i])}"`);
        await answer.body?.cancel();
      }
      for (const [i, body] of bodies.entries()) {
        const got = new Uint8Array(await (await fetch(url(`dir/obj-${i}`))).arrayBuffer());
        assert.equal(sha256Hex(got), sha256Hex(body), `obj-${i}`);
      }
    },
  );

  await t.step(
    "a body shorter than its Content-Length is IncompleteBody and not stored",
    async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: svc.port });
      const head = `PUT /${BUCKET}/short HTTP/1.1\r\nhost: x\r\ncontent-length: ${3 * MiB}\r\n\r\n`;
      await conn.write(new TextEncoder().encode(head));
      const part = randomBytes(MiB);
      for (let o = 0; o < part.length;) o += await conn.write(part.subarray(o));
      await conn.closeWrite();
      await new Response(conn.readable).arrayBuffer().catch(() => {});
      assert.equal((await fetch(url("short"))).status, 404);
    },
  );
  await t.step(
    "large PUTs at once, with checksums, read back exact (their read buffers are recycled)",
    async () => {
      // Each upload's megabyte read buffers go back to one pool once written: bytes of one
      // upload must never show up in another, nor in a digest computed after the write.
      const bodies = Array.from({ length: 4 }, (_, i) => randomBytes(7 * MiB + 1000 * i + 1));
      const puts = await Promise.all(
        bodies.map((body, i) =>
          socketPut(svc.port, `/${BUCKET}/recycled-${i}`, body, 262_147 + i, {
            "x-amz-checksum-sha256": createHash("sha256").update(body).digest("base64"),
          })
        ),
      );
      for (const [i, put] of puts.entries()) {
        assert.equal(put.status, 200, put.text);
        assert.match(put.text, new RegExp(`etag: "${md5Hex(bodies[i])}"`, "i"));
      }
      const reads = await Promise.all(
        bodies.map(async (_, i) =>
          new Uint8Array(await (await fetch(url(`recycled-${i}`))).arrayBuffer())
        ),
      );
      reads.forEach((got, i) =>
        assert.equal(sha256Hex(got), sha256Hex(bodies[i]), `recycled-${i}`)
      );
    },
  );

  await t.step(
    "small objects read inline answer whole, ranged, conditional and HEAD reads",
    async () => {
      // Up to 64 KiB a body is read with its metadata and sent with the headers; one byte more
      // streams from the file as before.
      for (const size of [0, 1, 4096, 64 * 1024, 64 * 1024 + 1]) {
        const body = randomBytes(size);
        const key = `small-${size}`;
        const put = await fetch(url(key), { method: "PUT", body });
        assert.equal(put.status, 200);
        await put.body?.cancel();
        const whole = await fetch(url(key));
        assert.equal(whole.status, 200);
        assert.equal(whole.headers.get("content-length"), String(size));
        assert.equal(whole.headers.get("etag"), `"${md5Hex(body)}"`);
        assert.ok(whole.headers.get("x-amz-request-id"));
        assert.equal(sha256Hex(new Uint8Array(await whole.arrayBuffer())), sha256Hex(body));
        const head = await fetch(url(key), { method: "HEAD" });
        assert.equal(head.headers.get("content-length"), String(size));
        const notModified = await fetch(url(key), {
          headers: { "if-none-match": `"${md5Hex(body)}"` },
        });
        assert.equal(notModified.status, 304);
        await notModified.body?.cancel();
        if (size < 10) continue;
        const ranged = await fetch(url(key), { headers: { range: "bytes=3-9" } });
        assert.equal(ranged.status, 206);
        assert.equal(ranged.headers.get("content-range"), `bytes 3-9/${size}`);
        assert.deepEqual(new Uint8Array(await ranged.arrayBuffer()), body.subarray(3, 10));
        const tail = await fetch(url(key), { headers: { range: "bytes=-5" } });
        assert.deepEqual(new Uint8Array(await tail.arrayBuffer()), body.subarray(size - 5));
      }
    },
  );
});
