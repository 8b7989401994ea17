/**
 * Buffer lifetime of encrypted downloads (aes256-gcm-proxy), black-box: slow clients over
 * HTTP/1.1 and over HTTP/2 (cleartext, prior knowledge, which svc's listener accepts) download a
 * multi-batch encrypted object, whole and ranged, and must get exactly its bytes.
 *
 * Why these clients: Deno's HTTP layer keeps a response chunk, without copying it, after the
 * stream has handed it over; over HTTP/2 it holds several chunks until the client's window takes
 * them (measured: a chunk rewritten four chunks later reached an HTTP/2 client rewritten). A
 * decrypted chunk reused too early (a pool recycling it once the stream moved on) would put
 * other bytes on the wire, bytes of another object when the pool is shared; a slow reader keeps
 * chunks queued longest, so these downloads fail if that ever happens
 * (src/storage/encryption/decrypt-stream.ts hands out a fresh array per batch for this reason).
 * Skipped cleanly when curl (with HTTP/2) is not installed.
 */
import assert from "node:assert/strict";
import { randomBytes, startSvc } from "./helpers/svc.ts";
import { sha256Hex } from "./helpers/delta.ts";

const MiB = 1024 * 1024;
const KEY = "c4".repeat(32);

async function curlCapable(): Promise<boolean> {
  try {
    const { success, stdout } = await new Deno.Command("curl", {
      args: ["--version"],
      stdout: "piped",
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(stdout);
    return success && /\bHTTP2\b/.test(text);
  } catch {
    return false;
  }
}

const hasCurl = await curlCapable();

/** Downloads with curl at `rate` bytes/s; returns the HTTP version, status and body bytes. */
async function slowDownload(
  url: string,
  http: "1.1" | "2",
  rate: string,
  range?: string,
): Promise<{ version: string; status: number; body: Uint8Array }> {
  const out = await Deno.makeTempFile({ prefix: "svc-lifetime-" });
  try {
    const { success, stdout, stderr } = await new Deno.Command("curl", {
      args: [
        "--silent",
        "--show-error",
        http === "2" ? "--http2-prior-knowledge" : "--http1.1",
        "--limit-rate",
        rate,
        ...(range ? ["--range", range] : []),
        "--output",
        out,
        "--write-out",
        "%{http_version} %{http_code}",
        url,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(success, `curl failed: ${new TextDecoder().decode(stderr)}`);
    const [version, status] = new TextDecoder().decode(stdout).trim().split(" ");
    return { version, status: Number(status), body: await Deno.readFile(out) };
  } finally {
    await Deno.remove(out).catch(() => {});
  }
}

Deno.test({
  name: "encryption lifetime: slow HTTP/1.1 and HTTP/2 readers get exactly the decrypted bytes",
  ignore: !hasCurl,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "svc-lifetime-" });
    await Deno.writeTextFile(
      `${dir}/svc.yaml`,
      "storage:\n  backend_encryption:\n    mode: aes256-gcm-proxy\n",
    );
    try {
      await using svc = await startSvc({
        // Anonymous access keeps curl's requests plain; authentication is not the subject here.
        env: {
          SVC_CONFIG: `${dir}/svc.yaml`,
          SVC_ENCRYPTION_KEY: KEY,
          SVC_AUTHENTICATION: "none",
        },
      });
      assert.equal((await fetch(`${svc.url}/slow`, { method: "PUT" })).status, 200);
      // 12 MiB: thirteen batches of 960 KiB, far more than the layers below keep in flight.
      const body = randomBytes(12 * MiB + 4321);
      const put = await fetch(`${svc.url}/slow/object.bin`, { method: "PUT", body });
      assert.equal(put.status, 200);
      await put.body?.cancel();
      const url = `${svc.url}/slow/object.bin`;
      const expected = sha256Hex(body);

      // Both at once: two downloads' batches in the process together.
      const [h2, h1] = await Promise.all([
        slowDownload(url, "2", "6M"),
        slowDownload(url, "1.1", "6M"),
      ]);
      assert.equal(h2.version, "2", "the HTTP/2 download really used HTTP/2");
      for (const got of [h2, h1]) {
        assert.equal(got.status, 200);
        assert.equal(got.body.length, body.length, `HTTP/${got.version} length`);
        assert.equal(sha256Hex(got.body), expected, `HTTP/${got.version} bytes`);
      }

      // A range over several batches, starting and ending inside frames.
      const start = 3 * MiB + 17;
      const end = 9 * MiB + 65_000;
      const ranged = await slowDownload(url, "2", "6M", `${start}-${end}`);
      assert.equal(ranged.status, 206);
      assert.equal(
        sha256Hex(ranged.body),
        sha256Hex(body.subarray(start, end + 1)),
        "ranged HTTP/2 bytes",
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
