/**
 * Black-box test of a frozen S3 backend: it keeps taking connections and bytes and answers
 * nothing. Once the backend has been silent longer than the connect timeout, requests probe it
 * for that long only and answer 503 SlowDown, instead of each waiting connect + read timeout per
 * attempt; the first answer it gives again ends that. The backend is a backing svc behind a TCP
 * relay that can be frozen.
 */
import assert from "node:assert/strict";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { startBackingSvc, startFront } from "./helpers/s3-front.ts";
import { signedFetch as fetch } from "./helpers/svc.ts";
import { codeOf } from "./helpers/assertions.ts";

/** A TCP relay to `target` that, while frozen, swallows what it receives and sends nothing. */
function startRelay(target: string) {
  const { hostname, port } = new URL(target);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const state = { frozen: false };
  const pump = async (from: Deno.Conn, to: Deno.Conn) => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        if (state.frozen) continue;
        for (let at = 0; at < n;) at += await to.write(buffer.subarray(at, n));
      }
    } catch { /* either side closed */ }
    for (const conn of [from, to]) {
      try {
        conn.close();
      } catch { /* closed already */ }
    }
  };
  (async () => {
    for await (const client of listener) {
      const upstream = await Deno.connect({ hostname, port: Number(port) }).catch(() => null);
      if (!upstream) {
        client.close();
        continue;
      }
      conns.add(client).add(upstream);
      pump(client, upstream);
      pump(upstream, client);
    }
  })().catch(() => {});
  return {
    endpoint: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    state,
    close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed already */ }
      }
    },
  };
}

Deno.test("S3 backend: a frozen backend answers 503 SlowDown within the connect timeout", async () => {
  const backing = await startBackingSvc(["frozen"]);
  const relay = startRelay(backing.endpoint);
  try {
    await using front = await startFront({ ...backing, endpoint: relay.endpoint }, {
      SVC_S3_CONNECT_TIMEOUT_SECS: "1",
      SVC_S3_READ_TIMEOUT_SECS: "4",
      SVC_S3_OPERATION_ATTEMPT_TIMEOUT_SECS: "30",
    });
    const s3 = front.client();
    await s3.send(new CreateBucketCommand({ Bucket: "frozen" }));
    await s3.send(new PutObjectCommand({ Bucket: "frozen", Key: "k", Body: "body" }));
    const read = () => fetch(`${front.url}/frozen/k`);

    relay.state.frozen = true;
    let started = performance.now();
    // The first read waits its full headers timeout (1 + 4 s): nothing says the backend is
    // frozen yet. It is not retried: the backend has answered nothing since it began.
    const first = read().then(async (res) => ({
      res,
      text: await res.text(),
      ms: performance.now() - started,
    }));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Silent for longer than the connect timeout: a new read probes for 1 s, then 503.
    const probeStart = performance.now();
    const second = await read();
    const secondMs = performance.now() - probeStart;
    assert.equal(second.status, 503);
    assert.equal(codeOf(await second.text()), "SlowDown");
    assert.ok(secondMs < 2500, `the probe took ${secondMs} ms`);
    const { res, text, ms } = await first;
    assert.equal(res.status, 503);
    assert.equal(codeOf(text), "SlowDown");
    assert.ok(ms >= 4500 && ms < 8000, `the first read took ${ms} ms`);
    // Still frozen: every request is a short probe now.
    started = performance.now();
    const third = await read();
    await third.body?.cancel();
    assert.equal(third.status, 503);
    assert.ok(performance.now() - started < 2500);

    // Thawed: the next answer ends the suspicion, and reads wait normally again.
    relay.state.frozen = false;
    let thawed: Response | undefined;
    for (let i = 0; i < 5 && thawed?.status !== 200; i++) {
      await thawed?.body?.cancel();
      thawed = await read();
    }
    assert.equal(thawed?.status, 200);
    assert.equal(await thawed!.text(), "body");
    const again = await s3.send(new GetObjectCommand({ Bucket: "frozen", Key: "k" }));
    assert.equal(await again.Body!.transformToString(), "body");
  } finally {
    relay.close();
    await backing.stop();
  }
});
