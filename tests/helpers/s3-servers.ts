/**
 * Real S3-compatible servers for backend tests, on free loopback ports: a second svc (main.ts in
 * a subprocess, filesystem storage) and s3rver from npm (a Node S3 emulator). Both are black
 * boxes: tests reach them only through the S3 backend under test.
 */
import { ACCESS_KEY, SECRET_KEY, startSvc } from "./svc.ts";

export interface S3Server {
  name: string;
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

const ROOT = new URL("../../", import.meta.url).pathname;
const S3RVER = `${ROOT}node_modules/s3rver/bin/s3rver.js`;

/** A svc instance with a temp data dir, as an S3 store. */
export async function startSvcServer(): Promise<S3Server> {
  const svc = await startSvc();
  return {
    name: "svc",
    endpoint: svc.url,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    stop: () => svc.stop(),
  };
}

/**
 * Why s3rver cannot run here, or undefined when it can: it needs `node` on the PATH and the npm
 * package installed (a devDependency).
 */
export async function s3rverUnavailable(): Promise<string | undefined> {
  try {
    await Deno.stat(S3RVER);
  } catch {
    return `s3rver is not installed (${S3RVER} missing; run npm ci)`;
  }
  try {
    const { success } = await new Deno.Command("node", { args: ["--version"], stdout: "null" })
      .output();
    return success ? undefined : "node does not run";
  } catch {
    return "node is not on the PATH";
  }
}

/**
 * s3rver on a free port with a temp directory; its fixed credentials are S3RVER / S3RVER.
 * `--openssl-legacy-provider` because its signing code uses digests Node 17+ hides otherwise.
 */
export async function startS3rver(): Promise<S3Server> {
  const directory = await Deno.makeTempDir({ prefix: "s3rver-" });
  const child = new Deno.Command("node", {
    args: [
      "--openssl-legacy-provider",
      S3RVER,
      "--directory",
      directory,
      "--address",
      "127.0.0.1",
      "--port",
      "0",
      "--no-vhost-buckets",
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const logs: string[] = [];
  let resolvePort!: (port: number) => void;
  const portFound = new Promise<number>((resolve) => resolvePort = resolve);
  // Both pipes are drained for the server's whole life: a full pipe would block it.
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      if (logs.length < 200) logs.push(text);
      const match = /listening on [^\s:]+:(\d+)/i.exec(text);
      if (match) resolvePort(Number(match[1]));
    }
  };
  const pumps = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const exited = child.status.then((status) => {
    throw new Error(`s3rver exited (${status.code}) before listening:\n${logs.join("")}`);
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`s3rver did not start:\n${logs.join("")}`)), 20_000);
  });
  let port: number;
  try {
    port = await Promise.race([portFound, exited, timeout]);
  } catch (err) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await pumps.catch(() => {});
    await Deno.remove(directory, { recursive: true }).catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  exited.catch(() => {});
  let stopped = false;
  return {
    name: "s3rver",
    endpoint: `http://127.0.0.1:${port}`,
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await pumps.catch(() => {});
      await Deno.remove(directory, { recursive: true }).catch(() => {});
    },
  };
}
