/**
 * Smoke test of a built svc: what an operator does in the first minute after installing it.
 *
 *   node_modules/.bin/deno run -A scripts/release/smoke.ts --binary ./svc   # a compiled binary
 *   node_modules/.bin/deno run -A scripts/release/smoke.ts --source         # main.ts from source
 *
 * Steps (each prints one line; the first failure exits 1 with the reason): `--version` names the
 * release, commit and Deno; the server starts on a free loopback port with an empty data
 * directory; the first start prints a generated admin password, which logs in to the admin API;
 * two versions of a delta-eligible object go in through S3 (SigV4) and the second is stored as a
 * delta; both read back byte for byte; the admin console's page and its assets load; SIGTERM stops
 * the server cleanly. `release.sh` runs it on the binary it builds for this machine's target.
 */
import { AwsClient } from "aws4fetch";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

/** The command that runs svc: the binary, or deno running main.ts. */
export function svcCommand(args: string[]): { program: string; prefix: string[] } {
  const binary = valueOf(args, "--binary");
  if (binary !== undefined) return { program: binary, prefix: [] };
  if (args.includes("--source")) {
    return { program: DENO, prefix: ["run", "--allow-all", `${ROOT}main.ts`] };
  }
  throw new Error('Usage: smoke.ts --binary <path> | --source (got "' + args.join(" ") + '")');
}

function valueOf(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

function step(text: string): void {
  console.log(`smoke: ${text}`);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The password the first start printed: the indented line after the banner's first sentence. */
export function generatedPassword(log: string): string | undefined {
  const lines = log.split("\n");
  const at = lines.findIndex((line) => line.includes("generated the admin (bootstrap) password"));
  if (at < 0) return undefined;
  return lines.slice(at + 1).map((line) => line.trim()).find((line) => line !== "");
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Pseudo-random bytes of a fixed seed: a body that does not compress, the same every run. */
function bodyOf(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

export async function smoke(command: { program: string; prefix: string[] }): Promise<void> {
  const version = await new Deno.Command(command.program, {
    args: [...command.prefix, "--version"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const versionText = new TextDecoder().decode(version.stdout);
  check(version.success, `--version failed: ${new TextDecoder().decode(version.stderr)}`);
  check(/^svc \S+\ncommit \S+\ndeno \S+/.test(versionText), `--version printed "${versionText}"`);
  step(`version: ${versionText.trim().replaceAll("\n", ", ")}`);

  const dataDir = await Deno.makeTempDir({ prefix: "svc-smoke-" });
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const accessKeyId = "SMOKE" + crypto.randomUUID().replaceAll("-", "").slice(0, 15).toUpperCase();
  const secretAccessKey = crypto.randomUUID() + crypto.randomUUID();
  const child = new Deno.Command(command.program, {
    args: [...command.prefix, "--listen", `127.0.0.1:${port}`],
    cwd: dataDir,
    env: {
      SVC_DATA_DIR: `${dataDir}/data`,
      SVC_ACCESS_KEY_ID: accessKeyId,
      SVC_SECRET_ACCESS_KEY: secretAccessKey,
      SVC_DEBUG_HEADERS: "true",
      DENO_NO_UPDATE_CHECK: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) log += text;
  };
  const pumps = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let stopped = false;
  try {
    await waitHealthy(url, child);
    step(`started on ${url}`);

    const password = generatedPassword(log);
    check(password, "the first start printed no generated admin password");
    const login = await fetch(`${url}/_/api/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ password }),
    });
    await login.body?.cancel();
    const cookie = login.headers.get("set-cookie")?.split(";")[0];
    check(login.ok && cookie, `admin login answered ${login.status}`);
    const whoami = await fetch(`${url}/_/api/whoami`, { headers: { cookie } });
    check(whoami.ok, `whoami with the session answered ${whoami.status}`);
    step(`admin login with the first-run password: ${JSON.stringify(await whoami.json())}`);

    const s3 = new AwsClient({ accessKeyId, secretAccessKey, service: "s3", region: "us-east-1" });
    const made = await s3.fetch(`${url}/smoke`, { method: "PUT" });
    check(made.ok, `CreateBucket answered ${made.status}: ${await made.text()}`);
    const first = bodyOf(2 << 20, 7);
    const second = first.slice();
    second.set(bodyOf(4096, 11), 1 << 20); // a small change in the middle
    const kinds: string[] = [];
    for (const [key, body] of [["app-1.0.0.tar", first], ["app-1.0.1.tar", second]] as const) {
      const put = await s3.fetch(`${url}/smoke/builds/${key}`, { method: "PUT", body });
      await put.body?.cancel();
      check(put.ok, `PUT ${key} answered ${put.status}`);
      kinds.push(put.headers.get("x-amz-storage-type") ?? "?");
    }
    check(kinds[1] === "delta", `the second version was stored as "${kinds[1]}", not as a delta`);
    for (const [key, body] of [["app-1.0.0.tar", first], ["app-1.0.1.tar", second]] as const) {
      const got = await s3.fetch(`${url}/smoke/builds/${key}`);
      check(got.ok, `GET ${key} answered ${got.status}`);
      const bytes = new Uint8Array(await got.arrayBuffer());
      check(
        await sha256Hex(bytes) === await sha256Hex(body),
        `GET ${key} returned other bytes (${bytes.length} of ${body.length})`,
      );
    }
    step(`S3 PUT/GET of two versions: stored as ${kinds.join(", ")}, both byte-identical`);

    const page = await fetch(`${url}/_/`);
    const html = await page.text();
    check(page.ok && html.includes("<html"), `the console page answered ${page.status}`);
    const assets = [...html.matchAll(/\/_\/assets\/[\w.-]+/g)].map((m) => m[0]);
    check(assets.length > 0, "the console page names no assets");
    for (const asset of assets) {
      const got = await fetch(`${url}${asset}`);
      await got.body?.cancel();
      check(got.ok, `console asset ${asset} answered ${got.status}`);
    }
    step(`admin console loads (${assets.length} assets)`);

    child.kill("SIGTERM");
    stopped = true;
    const status = await withTimeout(child.status, 30_000, "svc did not stop within 30 s");
    check(status.success, `svc exited with ${status.code} after SIGTERM`);
    step("stopped cleanly on SIGTERM");
  } catch (err) {
    const tail = log.split("\n").slice(-30).join("\n");
    throw new Error(`${(err as Error).message}\n--- server log (last lines) ---\n${tail}`);
  } finally {
    if (!stopped) {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
    }
    await pumps.catch(() => {});
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

async function waitHealthy(url: string, child: Deno.ChildProcess): Promise<void> {
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    check(!exited, "svc exited during start-up");
    try {
      const res = await fetch(`${url}/_/health`);
      await res.body?.cancel();
      if (res.ok) return;
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("svc did not answer /_/health within 60 s");
}

function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

if (import.meta.main) {
  try {
    await smoke(svcCommand(Deno.args));
    step("all checks passed");
  } catch (err) {
    console.error(`smoke: FAILED: ${(err as Error).message}`);
    Deno.exit(1);
  }
}
