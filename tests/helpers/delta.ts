/**
 * Looking behind the S3 surface in the delta-store tests: which files a bucket holds on disk and
 * how each was stored (the `storage` field of its `user.svc.meta` attribute), plus stand-ins for
 * the xdelta3 binary that fail in controlled ways. The S3 answers alone cannot tell a delta from
 * a passthrough copy, so these tests must look at the data directory.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { signedFetch, startSvc, type SvcProcess } from "./svc.ts";
import { getJsonXattr } from "../../src/native/xattr.ts";
import { until } from "./poll.ts";

export const sha256Hex = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

export interface StoredFile {
  /** Path inside the bucket directory, `/`-separated. */
  name: string;
  /** Bytes on disk. */
  size: number;
  /** `storage` from the metadata attribute: passthrough, delta or reference. */
  storage?: string;
  meta: Record<string, unknown> | null;
}

/** Every file of a bucket on disk (directory markers and files without metadata included). */
export function storedFiles(dataDir: string, bucket: string): StoredFile[] {
  const out: StoredFile[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) {
        walk(path, `${prefix}${entry.name}/`);
        continue;
      }
      const meta = getJsonXattr<Record<string, unknown>>(path, "user.svc.meta");
      out.push({
        name: prefix + entry.name,
        size: Deno.statSync(path).size,
        storage: meta?.storage as string | undefined,
        meta,
      });
    }
  };
  walk(`${dataDir}/${bucket}`, "");
  return out.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** One stored file by name, or undefined. */
export function storedFile(dataDir: string, bucket: string, name: string): StoredFile | undefined {
  return storedFiles(dataDir, bucket).find((f) => f.name === name);
}

/** Names of stored files as `name:storage`, for compact exact assertions. */
export function layoutOf(dataDir: string, bucket: string, under = ""): string[] {
  return storedFiles(dataDir, bucket)
    .filter((f) => f.name.startsWith(under))
    .map((f) => `${f.name}:${f.storage ?? "-"}`);
}

/** Flips `count` bytes in the middle of a file on disk, keeping its xattr (in-place write). */
export async function corruptFile(path: string, count = 16): Promise<void> {
  const file = await Deno.open(path, { read: true, write: true });
  try {
    const { size } = await file.stat();
    const at = Math.max(0, Math.floor(size / 2) - Math.floor(count / 2));
    const bytes = new Uint8Array(Math.min(count, size));
    await file.seek(at, Deno.SeekMode.Start);
    await file.read(bytes);
    for (let i = 0; i < bytes.length; i++) bytes[i] ^= 0xa5;
    await file.seek(at, Deno.SeekMode.Start);
    await file.write(bytes);
  } finally {
    file.close();
  }
}

export type FakeXdelta3 =
  /** `-e` reads some input, then SIGKILLs itself: an encoder that dies mid-stream. */
  | { encode: "killed" }
  /** `-e` sleeps, then runs the real encoder: a slow codec. */
  | { encode: "slow"; seconds: number };

/**
 * A directory holding `xdelta3` and `zstd` scripts that stand in for the real ones (either codec
 * may write a delta, by the bucket's `delta_codec`): version probes and decodes go to the real
 * binary, encodes misbehave as asked. Put it first on the server's PATH.
 */
export async function fakeXdelta3Dir(behaviour: FakeXdelta3): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "svc-fake-xdelta3-" });
  const onEncode = behaviour.encode === "killed"
    ? "head -c 65536 >/dev/null; kill -9 $$"
    // One-second sleeps detached from the pipes: when the script is killed, no sleeper holds
    // its stdout open or outlives it by more than a second.
    : `i=0; while [ $i -lt ${behaviour.seconds} ]; do sleep 1 </dev/null >/dev/null 2>&1; ` +
      "i=$((i+1)); done";
  const script = [
    "#!/bin/sh",
    'for arg in "$@"; do',
    `  if [ "$arg" = "-e" ]; then ${onEncode}; fi`,
    "done",
    'exec /usr/bin/xdelta3 "$@"',
    "",
  ].join("\n");
  await Deno.writeTextFile(`${dir}/xdelta3`, script, { mode: 0o755 });
  // zstd encodes a delta with `--patch-from=` and without `-d`.
  const zstd = [
    "#!/bin/sh",
    "encode=0",
    'for arg in "$@"; do',
    '  case "$arg" in --patch-from=*) encode=1;; esac',
    "done",
    'for arg in "$@"; do',
    '  if [ "$arg" = "-d" ]; then encode=0; fi',
    "done",
    `if [ $encode = 1 ]; then ${onEncode}; fi`,
    'exec /usr/bin/zstd "$@"',
    "",
  ].join("\n");
  await Deno.writeTextFile(`${dir}/zstd`, zstd, { mode: 0o755 });
  return dir;
}

/** Waits until a log line matches (the server logs asynchronously to the test's reads). */
export async function waitForLog(
  logs: string[],
  pattern: RegExp,
  timeoutMs = 5000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = logs.find((l) => pattern.test(l));
    if (line !== undefined) return line;
    if (Date.now() > deadline) {
      throw new Error(`no log line matching ${pattern}:\n${logs.join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A server with the debug headers on and `bucket` created (kept when the data dir has it). */
export async function startWithBucket(
  bucket: string,
  env: Record<string, string> = {},
  dataDir?: string,
): Promise<SvcProcess> {
  // The suites using this check the parent rule's layout (`<folder>reference.bin`), unless they
  // bring a config file of their own.
  const args = env.SVC_CONFIG === undefined ? parentDeltaspaceArgs(bucket) : [];
  const svc = await startSvc({ env: { SVC_DEBUG_HEADERS: "true", ...env }, dataDir, args });
  const res = await signedFetch(`${svc.url}/${bucket}`, { method: "PUT" });
  assert.ok(res.status === 200 || res.status === 409, await res.text());
  return svc;
}

/** A PUT that must succeed. */
export async function putBytes(
  svc: SvcProcess,
  bucket: string,
  key: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<void> {
  const res = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body });
  assert.equal(res.status, 200, await res.text());
}

/**
 * Server arguments giving `buckets` the `parent` deltaspace policy (one baseline per folder,
 * `<folder>reference.bin`): for the tests that check that layout. The default, `auto`, keeps
 * baselines under `.dg/` (tests/deltaspace_groups_test.ts). The file goes when the run ends.
 */
export function parentDeltaspaceArgs(...buckets: string[]): string[] {
  const dir = Deno.makeTempDirSync({ prefix: "svc-parent-policy-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  });
  const lines = buckets.map((bucket) => `    ${bucket}: { deltaspace: parent }`);
  Deno.writeTextFileSync(`${dir}/svc.yaml`, `storage:\n  buckets:\n${lines.join("\n")}\n`);
  return ["--config", `${dir}/svc.yaml`];
}

/**
 * Waits until the server's archive backlog is empty (`svc_archive_backlog 0`): every archive PUT
 * before this call is converted, or kept as it came for good (docs/DELTA.md "Archives converted in
 * the background").
 */
export async function archivesConverted(svc: { url: string }, timeoutMs = 60_000): Promise<void> {
  await until("the archive backlog to empty", async () => {
    const scrape = await (await fetch(`${svc.url}/_/metrics`)).text();
    return /^svc_archive_backlog 0$/m.test(scrape) ? true : undefined;
  }, timeoutMs);
}
