/**
 * The server side of scripts/bench/savings.ts: a config file naming every bench bucket (with
 * the bucket settings under test), starting the real server from a tree or a command, an admin
 * login for the usage API, and the bytes a bucket takes on disk.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { DENO, GiB } from "./lib.ts";

export const ACCESS_KEY = "AKIABENCHSAVINGS0000";
export const SECRET_KEY = "bench-savings-secret-key-0000000000000";
/** The admin password and its bcrypt hash (cost 4), as in tests/helpers/admin.ts. */
const ADMIN_PASSWORD = "test-admin-password-123";
const ADMIN_PASSWORD_HASH = "$2b$04$/M04MqciaDk2C.yCWs2lnOEtEe1b.BLR11Xkb9vwOGzree2zQuD5S";

export interface ServerSpec {
  /** A tree with main.ts, run with this repo's deno; or... */
  tree?: string;
  /** ...a command line (split on spaces) that serves svc, given `--config` and `--listen`. */
  command?: string;
  /** Extra environment, e.g. cache sizes. */
  env?: Record<string, string>;
}

export interface Server {
  url: string;
  pid: number;
  logs: string[];
  stop(): Promise<void>;
}

/**
 * The YAML config: `compressed` buckets get `settings` (raw YAML scalars, e.g. `deltaspace:
 * parent`), `plain` buckets `compression: false` (the passthrough reference).
 */
export function configYaml(
  compressed: string[],
  plain: string[],
  settings: Record<string, string>,
): string {
  const lines = ["storage:", "  buckets:"];
  for (const name of compressed) {
    const entries = Object.entries(settings);
    if (entries.length === 0) continue;
    lines.push(`    ${name}:`, ...entries.map(([k, v]) => `      ${k}: ${v}`));
  }
  for (const name of plain) lines.push(`    ${name}:`, "      compression: false");
  return lines.join("\n") + "\n";
}

/** Starts svc on `dataDir` with `config`; rejects with the server's output if it exits first. */
export async function startServer(
  spec: ServerSpec,
  dataDir: string,
  config: string,
): Promise<Server> {
  const [cmd, ...pre] = spec.command
    ? spec.command.split(" ").filter(Boolean)
    : [DENO, "run", "--allow-all", `${spec.tree}/main.ts`];
  const child = new Deno.Command(cmd, {
    args: [...pre, "--config", config, "--listen", "127.0.0.1:0"],
    cwd: spec.tree ?? dataDir,
    env: {
      DENO_NO_UPDATE_CHECK: "1",
      SVC_DATA_DIR: dataDir,
      SVC_ACCESS_KEY_ID: ACCESS_KEY,
      SVC_SECRET_ACCESS_KEY: SECRET_KEY,
      SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
      SVC_MAX_OBJECT_SIZE: String(4 * GiB),
      SVC_REPLAY_WINDOW_SECS: "0",
      SVC_LOG_LEVEL: "info",
      ...spec.env,
    },
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const logs: string[] = [];
  const decoder = new TextDecoder();
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listen line:\n${logs.join("")}`)), 60_000);
    for (const stream of [child.stdout, child.stderr]) {
      (async () => {
        for await (const chunk of stream) {
          logs.push(decoder.decode(chunk));
          if (logs.length > 400) logs.splice(0, 200);
          const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(logs.join(""));
          if (match) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        }
      })();
    }
    child.status.then((status) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${status.code}) before listening:\n${logs.join("")}`));
    });
  });
  return {
    url,
    pid: child.pid,
    logs,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
    },
  };
}

export function s3Client(url: string): S3Client {
  return new S3Client({
    endpoint: url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** An admin session cookie (bootstrap password), for `/_/stats`. */
export async function adminCookie(url: string): Promise<string | undefined> {
  const res = await fetch(`${url}/_/api/admin/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ password: ADMIN_PASSWORD }),
  });
  await res.body?.cancel();
  return res.headers.get("set-cookie")?.split(";")[0];
}

/** `stored_bytes` of a bucket from the usage API (`/_/stats?bucket=`), or NaN. */
export async function usageStored(url: string, cookie: string | undefined, bucket: string) {
  if (!cookie) return NaN;
  const res = await fetch(`${url}/_/stats?bucket=${bucket}`, { headers: { cookie } });
  if (!res.ok) {
    await res.body?.cancel();
    return NaN;
  }
  const body = await res.json();
  return Number(body.buckets?.[bucket]?.stored_bytes ?? body.total_stored_size ?? NaN);
}

/**
 * Bytes a folder takes: file sizes plus extended attribute names and values (svc keeps object
 * metadata in xattrs), summed by one python3 process. Block rounding is left out on purpose:
 * it would count the filesystem, not the codec.
 */
export async function bytesOnDisk(
  dir: string,
): Promise<{ files: number; xattrs: number; deltas: number }> {
  const script = [
    "import os, sys",
    "f = x = d = 0",
    "for r, ds, fs in os.walk(sys.argv[1]):",
    "    for n in fs + ds:",
    "        p = os.path.join(r, n)",
    "        if n in fs: f += os.lstat(p).st_size",
    "        if n in fs and n.endswith('.delta'): d += 1",
    "        for a in os.listxattr(p, follow_symlinks=False):",
    "            x += len(a) + len(os.getxattr(p, a, follow_symlinks=False))",
    "print(f, x, d)",
  ].join("\n");
  const out = await new Deno.Command("python3", { args: ["-c", script, dir], stdout: "piped" })
    .output();
  const [files, xattrs, deltas] = new TextDecoder().decode(out.stdout).trim().split(" ")
    .map(Number);
  return { files, xattrs, deltas };
}

/**
 * Waits until the server's background archive conversions are done (`svc_archive_backlog 0`; a
 * tree without the metric has none) and returns how long that took, in seconds.
 */
export async function conversionsDone(url: string): Promise<number> {
  const t = performance.now();
  for (;;) {
    const scrape = await (await fetch(`${url}/_/metrics`)).text();
    const waiting = scrape.match(/^svc_archive_backlog (\d+)/m);
    if (!waiting || waiting[1] === "0") return (performance.now() - t) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
