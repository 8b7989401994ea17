/**
 * Starts the real svc (main.ts in a subprocess) on a free loopback port with a temp data dir, and
 * hands out clients for it. Every black-box test talks to svc only over HTTP.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { ADMIN_PASSWORD_HASH } from "./admin.ts";

export const ACCESS_KEY = "AKIATESTSVC000000000";
export const SECRET_KEY = "test-secret-key-for-the-black-box-suite";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

export interface SvcProcess {
  url: string;
  port: number;
  dataDir: string;
  /** Lines the server wrote so far (stdout and stderr). */
  logs: string[];
  client(options?: { checksums?: boolean }): S3Client;
  /** Sends a signal to the server process (e.g. SIGHUP to reload its config). */
  kill(signal: Deno.Signal): void;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  args?: string[];
  /** Reuse an existing data dir (restart tests). */
  dataDir?: string;
  /**
   * Leave SVC_DATA_DIR unset so the config file decides where data lives (the process still
   * runs in `dataDir`).
   */
  dataDirFromConfig?: boolean;
  /** This server is itself the S3 backend of another (SVC_TEST_BACKEND=svc): plain storage. */
  backing?: boolean;
  /** Run under this open-file limit (soft and hard, through prlimit): descriptor-flood tests. */
  nofile?: number;
  /** Variables the helper sets by default that this server must not get. */
  unsetEnv?: string[];
}

async function pump(
  stream: ReadableStream<Uint8Array>,
  logs: string[],
  onLine: (l: string) => void,
) {
  const decoder = new TextDecoderStream();
  let buffered = "";
  for await (const text of stream.pipeThrough(decoder)) {
    buffered += text;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      logs.push(line);
      onLine(line);
    }
  }
}

/** The S3 server every test server gets as its backend, from SVC_TEST_BACKEND (see README). */
const BACKEND_UNDER_TEST = Deno.env.get("SVC_TEST_BACKEND");

/**
 * Whether servers of this run keep their objects in their data directory. With
 * SVC_TEST_BACKEND=svc or s3rver they use an S3 backend instead: checks that look inside the data
 * directory skip themselves.
 */
export const objectsOnLocalDisk = BACKEND_UNDER_TEST === undefined;

/**
 * With SVC_TEST_BACKEND set, a server that does not choose its storage itself gets a fresh S3
 * server of its own as its backend (a second svc on a temp directory, or s3rver), so the same
 * black-box suites exercise the S3 backend. The suites run this way use no delta-eligible keys,
 * so a backing svc with default settings stores the front's objects verbatim.
 */
async function backendUnderTest(
  options: StartOptions,
): Promise<{ env: Record<string, string>; stop(): Promise<void> } | undefined> {
  if (BACKEND_UNDER_TEST === undefined || options.backing) return undefined;
  if (options.dataDirFromConfig || options.args?.includes("--config")) return undefined;
  if (options.env?.SVC_S3_ENDPOINT) return undefined;
  let server: {
    endpoint: string;
    accessKeyId: string;
    secretAccessKey: string;
    stop(): Promise<void>;
  };
  if (BACKEND_UNDER_TEST === "s3rver") {
    const { startS3rver } = await import("./s3-servers.ts");
    server = await startS3rver();
  } else if (BACKEND_UNDER_TEST === "svc") {
    const backing = await startSvc({ backing: true });
    server = {
      endpoint: backing.url,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
      stop: () => backing.stop(),
    };
  } else {
    throw new Error(`SVC_TEST_BACKEND must be svc or s3rver, got "${BACKEND_UNDER_TEST}"`);
  }
  return {
    env: {
      SVC_S3_ENDPOINT: server.endpoint,
      SVC_BE_AWS_ACCESS_KEY_ID: server.accessKeyId,
      SVC_BE_AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    },
    stop: () => server.stop(),
  };
}

export async function startSvc(options: StartOptions = {}): Promise<SvcProcess> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "svc-test-" });
  const backing = await backendUnderTest(options);
  const logs: string[] = [];
  const denoArgs = [
    "run",
    "--allow-all",
    `${ROOT}main.ts`,
    "--listen",
    "127.0.0.1:0",
    ...(options.args ?? []),
  ];
  const command = options.nofile === undefined ? DENO : "prlimit";
  const args = options.nofile === undefined
    ? denoArgs
    : [`--nofile=${options.nofile}:${options.nofile}`, DENO, ...denoArgs];
  const env: Record<string, string> = {
    DENO_NO_UPDATE_CHECK: "1",
    ...(options.dataDirFromConfig ? {} : { SVC_DATA_DIR: dataDir }),
    SVC_ACCESS_KEY_ID: ACCESS_KEY,
    SVC_SECRET_ACCESS_KEY: SECRET_KEY,
    SVC_LOG_LEVEL: "info",
    // Many suites send raw aws4fetch requests (UNSIGNED-PAYLOAD) with identical headers and
    // different bodies within one second: a replay with another body, which replay detection
    // rightly refuses. tests/replay_test.ts and the auth suites turn it on where it is the
    // subject.
    SVC_REPLAY_WINDOW_SECS: "0",
    // A known bootstrap password (tests/helpers/admin.ts): no generated one printed per server.
    SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
    ...backing?.env,
    ...options.env,
  };
  for (const name of options.unsetEnv ?? []) delete env[name];
  const child = new Deno.Command(command, {
    args,
    cwd: dataDir,
    env,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let resolvePort!: (port: number) => void;
  const portFound = new Promise<number>((resolve) => resolvePort = resolve);
  let scheme = "http";
  const onLine = (line: string) => {
    const match = /listening on (https?):\/\/[^:]+:(\d+)/.exec(line);
    if (match) {
      scheme = match[1];
      resolvePort(Number(match[2]));
    }
  };
  const pumps = Promise.all([pump(child.stdout, logs, onLine), pump(child.stderr, logs, onLine)]);
  const exited = child.status.then((status) => {
    throw new Error(`svc exited (${status.code}) before listening:\n${logs.join("\n")}`);
  });
  const timeout = new Promise<never>((_, reject) => {
    const id = setTimeout(
      () => reject(new Error(`svc did not start:\n${logs.join("\n")}`)),
      30_000,
    );
    portFound.finally(() => clearTimeout(id));
  });
  const port = await Promise.race([portFound, exited, timeout]).catch(async (err) => {
    await backing?.stop();
    throw err;
  });
  exited.catch(() => {});
  const url = `${scheme}://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await pumps.catch(() => {});
    await backing?.stop();
    if (options.dataDir === undefined) {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  };
  return {
    url,
    port,
    dataDir,
    logs,
    client: (clientOptions = {}) =>
      new S3Client({
        endpoint: url,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
        ...(clientOptions.checksums === false
          ? {
            requestChecksumCalculation: "WHEN_REQUIRED",
            responseChecksumValidation: "WHEN_REQUIRED",
          }
          : {}),
      }),
    kill: (signal) => child.kill(signal),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

const signer = new AwsClient({
  accessKeyId: ACCESS_KEY,
  secretAccessKey: SECRET_KEY,
  service: "s3",
  region: "us-east-1",
  retries: 0,
});

/**
 * `fetch` with a SigV4 header signature by the test credentials (aws4fetch), for black-box tests
 * that need raw HTTP. Import it as `fetch` to sign every call in a file.
 */
export async function signedFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
  const signed = await signer.sign(String(input), init);
  return await globalThis.fetch(signed);
}

/** Reads a whole response body (SDK or fetch) into bytes. */
export async function bytesOf(body: unknown): Promise<Uint8Array> {
  if (
    body && typeof (body as { transformToByteArray?: unknown }).transformToByteArray === "function"
  ) {
    return await (body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
  }
  return new Uint8Array(await new Response(body as BodyInit).arrayBuffer());
}

export function randomBytes(size: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  for (let offset = 0; offset < size; offset += 65536) {
    crypto.getRandomValues(out.subarray(offset, Math.min(size, offset + 65536)));
  }
  return out;
}
