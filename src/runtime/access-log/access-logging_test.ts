import assert from "node:assert/strict";
import type { AccessLogWriter } from "../../observability/mod.ts";
import { withAccessLog } from "./access-logging.ts";

function collector(): AccessLogWriter & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return {
    lines,
    write: (line) => void lines.push(JSON.parse(line)),
    flush: () => Promise.resolve(),
    reopen: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

const INFO = {
  remoteAddr: { transport: "tcp", hostname: "192.0.2.9", port: 5000 },
} as unknown as Deno.ServeHandlerInfo;

function chunks(count: number, size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ === count) controller.close();
      else controller.enqueue(new Uint8Array(size));
    },
  });
}

Deno.test("the line is written once the body was sent, with the bytes read and sent", async () => {
  const writer = collector();
  const handler = withAccessLog(
    async (request) => {
      const read = await request.arrayBuffer();
      return new Response(chunks(3, read.byteLength), { status: 201 });
    },
    writer,
    () => false,
  );
  const response = await handler(
    new Request("http://svc/b/k?X-Amz-Signature=abc", { method: "PUT", body: "12345" }),
    INFO,
  );
  assert.equal(writer.lines.length, 0, "not before the body is sent");
  assert.equal((await response.arrayBuffer()).byteLength, 15);
  assert.equal(writer.lines.length, 1);
  const [line] = writer.lines;
  assert.equal(line.status, 201);
  assert.equal(line.bytes_in, 5);
  assert.equal(line.bytes_out, 15);
  assert.equal(line.client, "192.0.2.9");
  assert.equal(line.operation, "PUT /b/k");
  assert.equal(line.query, "X-Amz-Signature=REDACTED");
});

Deno.test("a cancelled download logs what was sent, marked cancelled; HEAD sends 0", async () => {
  const writer = collector();
  const handler = withAccessLog(
    (request) =>
      Promise.resolve(
        request.method === "HEAD"
          ? new Response(null, { headers: { "content-length": "1000" } })
          : new Response(chunks(10, 100)),
      ),
    writer,
    () => true,
  );
  const response = await handler(
    new Request("http://svc/b/k", { headers: { "x-forwarded-for": "203.0.113.4" } }),
    INFO,
  );
  const reader = response.body!.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel();
  assert.equal(writer.lines.length, 1);
  assert.equal(writer.lines[0].bytes_out, 200);
  assert.equal(writer.lines[0].cancelled, true);
  assert.equal(writer.lines[0].client, "203.0.113.4", "trust_proxy_headers is respected");
  await handler(new Request("http://svc/b/k", { method: "HEAD" }), INFO);
  assert.equal(writer.lines[1].bytes_out, 0);
  assert.equal(writer.lines[1].bytes_in, 0);
});
