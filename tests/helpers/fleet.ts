/**
 * A fleet for black-box tests (issue 30): one S3 store (a backing svc on a temp directory), N svc
 * instances configured identically over it (same S3 backend and credentials, same bootstrap
 * password hash, a config sync bucket so IAM is shared, proxy headers trusted), and Debian's
 * HAProxy as an ordinary round-robin load balancer in front of them. Clients that rotate the
 * instances themselves (every request to the next one) come without the load balancer.
 *
 * `fleetReason` is null when haproxy runs here, else why fleet tests skip (printed once).
 * Instances keep their ports across a kill -9 and restart, so the load balancer's config stays.
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { ACCESS_KEY, SECRET_KEY, startSvc, type SvcProcess } from "./svc.ts";
import { startBackingSvc } from "./s3-front.ts";
import type { S3Server } from "./s3-servers.ts";

const HAPROXY_CANDIDATES = [Deno.env.get("SVC_HAPROXY"), "/usr/sbin/haproxy", "/usr/bin/haproxy"];

/** The haproxy executable, or null. */
export function haproxyPath(): string | null {
  for (const path of HAPROXY_CANDIDATES) {
    if (!path) continue;
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch { /* not here */ }
  }
  return null;
}

/** Why fleet tests cannot run here, or null. */
export const fleetReason: string | null = haproxyPath() === null
  ? "haproxy is not installed (apt-get install haproxy): fleet tests skipped"
  : null;
if (fleetReason) console.warn(`[skip] ${fleetReason}`);

/** The coordination bucket every instance shares (config sync, leases). */
export const COORD_BUCKET = "fleet-coord";

export interface FleetInstance {
  /** 0-based position; haproxy names it `svc<index>`. */
  index: number;
  port: number;
  url: string;
  dataDir: string;
  /** The running process, or null while killed. */
  process: SvcProcess | null;
}

export interface Fleet extends AsyncDisposable {
  /** The load balancer's address (null with `loadBalancer: false`). */
  url: string;
  store: S3Server & { svc: SvcProcess };
  instances: FleetInstance[];
  /** The instances' config file (one file: identical configuration). */
  configFile: string;
  /** An SDK client through the load balancer. */
  client(options?: ClientOptions): S3Client;
  /** An SDK client of one instance. */
  instanceClient(index: number, options?: ClientOptions): S3Client;
  /** An SDK client sending every request (and every retry) to the next live instance in turn. */
  rotatingClient(options?: ClientOptions): S3Client;
  /** kill -9 of one instance; haproxy's health check takes it out of rotation. */
  kill(index: number): Promise<void>;
  /** Starts a killed instance again on its port and data directory. */
  restart(index: number): Promise<void>;
  /** Waits until haproxy routes to every live instance (its health checks passed). */
  waitBalanced(timeoutMs?: number): Promise<void>;
  /**
   * Every request so far that haproxy passed to an instance (from its log, in order) or a
   * rotating client sent to one: which instance, the method and the path with its query.
   */
  requests(): Promise<RoutedRequest[]>;
  stop(): Promise<void>;
}

export interface RoutedRequest {
  via: "lb" | "rotating";
  instance: number;
  method: string;
  /** Path and query as sent (the query's parameter names only, for a rotating client). */
  target: string;
}

export interface ClientOptions {
  /** SDK attempts per request (default 1: a test sees the first failure unless it asks). */
  maxAttempts?: number;
  /** Checksums only when required (the default of older SDKs and of most other clients). */
  checksums?: boolean;
}

export interface FleetOptions {
  /** How many svc instances (default 3). */
  instances?: number;
  /** Buckets created on the store first (the backing svc keeps them verbatim). */
  buckets?: string[];
  /**
   * The lines under `storage:` instead of the store as the single S3 backend (given the store;
   * indented by two spaces), e.g. named backends.
   */
  backendsYaml?: (store: S3Server) => string;
  /** Appended to the instances' config file (indented lines under `advanced:`). */
  advancedYaml?: string;
  /** Added under `storage:` of the instances' config file (bucket policies, rules). */
  storageYaml?: string;
  /** Extra environment of every instance. */
  env?: Record<string, string>;
  /** Start haproxy (default true). */
  loadBalancer?: boolean;
  /**
   * Seal every stored byte with aes256-gcm-proxy under this key (64 hex characters), the same on
   * every instance (SVC_ENCRYPTION_KEY), as a fleet must be configured.
   */
  encryptionKey?: string;
}

function s3Client(endpoint: string, options: ClientOptions = {}): S3Client {
  return new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: options.maxAttempts ?? 1,
    ...(options.checksums === false
      ? { requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" }
      : {}),
  });
}

/** A free loopback port (bound and released: a small race another process could win). */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * HAProxy's config as an operator writes it for svc: HTTP mode, round robin per request, an
 * active health check, redispatch on a failed connection, X-Forwarded-For (the instances trust
 * it), and timeouts that let a large upload or a slow client take minutes. `X-Fleet-Server`
 * names the instance that answered, so tests can see the spread.
 */
export function haproxyConfig(port: number, servers: { name: string; port: number }[]): string {
  return `global
  maxconn 2048
  log stderr format raw local0

defaults
  mode http
  log global
  option httplog
  option forwardfor
  option redispatch
  retries 3
  timeout connect 2s
  timeout client 10m
  timeout server 10m
  timeout http-request 60s
  timeout http-keep-alive 10s
  timeout queue 30s

frontend s3
  bind 127.0.0.1:${port}
  default_backend svc

backend svc
  balance roundrobin
  option httpchk GET /_/health
  http-check expect status 200
  default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 2
  http-response set-header X-Fleet-Server %s
${servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check`).join("\n")}
`;
}

interface Haproxy {
  logs: string[];
  stop(): Promise<void>;
}

async function startHaproxy(dir: string, port: number, config: string): Promise<Haproxy> {
  const file = `${dir}/haproxy.cfg`;
  await Deno.writeTextFile(file, config);
  const child = new Deno.Command(haproxyPath()!, {
    args: ["-db", "-f", file],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      for (const line of text.split("\n")) if (line && logs.length < 20_000) logs.push(line);
    }
  };
  const pumps = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await pumps.catch(() => {});
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return { logs, stop };
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`haproxy did not listen on ${port}:\n${logs.join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The instances' shared config file: the store as S3 backend, config sync, proxy headers. */
function instanceYaml(
  store: S3Server,
  advancedYaml: string,
  encrypted: boolean,
  storageYaml = "",
  backendsYaml?: (store: S3Server) => string,
): string {
  const encryption = encrypted ? "  backend_encryption:\n    mode: aes256-gcm-proxy\n" : "";
  const backends = backendsYaml?.(store) ?? `  s3: ${store.endpoint}
  access_key_id: ${store.accessKeyId}
  secret_access_key: ${store.secretAccessKey}
`;
  return `storage:
${backends}${encryption}${storageYaml}advanced:
  config_sync_bucket: ${COORD_BUCKET}
  config_sync_poll_secs: 1
  trust_proxy_headers: true
${advancedYaml}`;
}

export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const count = options.instances ?? 3;
  const dir = await Deno.makeTempDir({ prefix: "svc-fleet-" });
  const store = await startBackingSvc([COORD_BUCKET, ...(options.buckets ?? [])]);
  const cleanups: (() => Promise<void>)[] = [() => store.stop()];
  const instances: FleetInstance[] = [];
  let haproxy: Haproxy | null = null;
  const stop = async () => {
    await haproxy?.stop();
    await Promise.all(instances.map((i) => i.process?.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const storeClient = s3Client(store.endpoint, { checksums: false });
    for (const bucket of [COORD_BUCKET, ...(options.buckets ?? [])]) {
      await storeClient.send(new CreateBucketCommand({ Bucket: bucket }));
    }
    storeClient.destroy();
    const configFile = `${dir}/svc.yaml`;
    await Deno.writeTextFile(
      configFile,
      instanceYaml(
        store,
        options.advancedYaml ?? "",
        options.encryptionKey !== undefined,
        options.storageYaml,
        options.backendsYaml,
      ),
    );
    const env: Record<string, string> = {
      SVC_BACKEND_LIST_FRESH_SECS: "0",
      ...(options.encryptionKey ? { SVC_ENCRYPTION_KEY: options.encryptionKey } : {}),
      ...options.env,
    };
    const launch = (instance: FleetInstance) =>
      startSvc({
        dataDir: instance.dataDir,
        args: ["--config", configFile, "--listen", `127.0.0.1:${instance.port}`],
        env,
        unsetEnv: ["SVC_S3_ENDPOINT"],
      });
    for (let index = 0; index < count; index++) {
      const dataDir = `${dir}/svc${index}`;
      await Deno.mkdir(dataDir);
      const port = freePort();
      instances.push({ index, port, url: `http://127.0.0.1:${port}`, dataDir, process: null });
    }
    // One after another: the first publishes the IAM state the others adopt at boot.
    for (const instance of instances) instance.process = await launch(instance);

    let lbPort = 0;
    if (options.loadBalancer !== false) {
      if (fleetReason) throw new Error(fleetReason);
      lbPort = freePort();
      haproxy = await startHaproxy(
        dir,
        lbPort,
        haproxyConfig(lbPort, instances.map((i) => ({ name: `svc${i.index}`, port: i.port }))),
      );
    }
    const lbUrl = `http://127.0.0.1:${lbPort}`;

    const waitBalanced = async (timeoutMs = 20_000) => {
      const live = new Set(instances.filter((i) => i.process).map((i) => i.index));
      const deadline = Date.now() + timeoutMs;
      while (haproxy) {
        // Round robin over live servers: 2 × live consecutive answers name every live one.
        const seen = new Set<number>();
        for (let i = 0; i < 2 * live.size; i++) {
          const response = await fetch(`${lbUrl}/_/health`).catch(() => null);
          await response?.body?.cancel();
          const name = response?.headers.get("x-fleet-server");
          if (name) seen.add(Number(name.replace("svc", "")));
        }
        if ([...live].every((i) => seen.has(i)) && [...seen].every((i) => live.has(i))) return;
        if (Date.now() > deadline) {
          throw new Error(`haproxy routes to ${[...seen]} instead of ${[...live]}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    if (haproxy) await waitBalanced();

    let turn = 0;
    const rotated: RoutedRequest[] = [];
    const fleet: Fleet = {
      url: lbUrl,
      store,
      instances,
      configFile,
      client: (clientOptions) => s3Client(lbUrl, clientOptions),
      instanceClient: (index, clientOptions) => s3Client(instances[index].url, clientOptions),
      rotatingClient(clientOptions) {
        const client = s3Client(instances[0].url, clientOptions);
        // Before signing, so the signed Host is the instance's; retries pass here again.
        client.middlewareStack.addRelativeTo(
          // deno-lint-ignore no-explicit-any
          (next: any) => (args: any) => {
            const live = instances.filter((i) => i.process !== null);
            const target = live[turn++ % live.length] ?? instances[0];
            args.request.hostname = "127.0.0.1";
            args.request.port = target.port;
            args.request.headers.host = `127.0.0.1:${target.port}`;
            const query = Object.keys(args.request.query ?? {}).join("&");
            rotated.push({
              via: "rotating",
              instance: target.index,
              method: args.request.method,
              target: query ? `${args.request.path}?${query}` : args.request.path,
            });
            return next(args);
          },
          {
            name: "fleetRotateMiddleware",
            relation: "before",
            toMiddleware: "httpSigningMiddleware",
            override: true,
          },
        );
        return client;
      },
      async kill(index) {
        const instance = instances[index];
        const process = instance.process;
        if (!process) return;
        instance.process = null;
        process.kill("SIGKILL");
        await process.stop();
      },
      async restart(index) {
        const instance = instances[index];
        if (instance.process) return;
        instance.process = await launch(instance);
      },
      waitBalanced,
      async requests() {
        // haproxy writes a request's log line once it is done: let the last ones arrive.
        await new Promise((r) => setTimeout(r, 200));
        const out: RoutedRequest[] = [];
        for (const line of haproxy?.logs ?? []) {
          const match = / svc\/svc(\d+) .*"([A-Z]+) (\S+) HTTP\//.exec(line);
          if (match) {
            out.push({ via: "lb", instance: Number(match[1]), method: match[2], target: match[3] });
          }
        }
        return [...out, ...rotated];
      },
      stop,
      [Symbol.asyncDispose]: stop,
    };
    return fleet;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * How many part uploads (UploadPart, UploadPartCopy: a PUT with `partNumber`) each instance took
 * while `work` ran, through the load balancer and rotating clients.
 */
export async function partsPerInstance(fleet: Fleet, work: () => Promise<void>): Promise<number[]> {
  const count = async () => {
    const counts = fleet.instances.map(() => 0);
    for (const request of await fleet.requests()) {
      if (request.method === "PUT" && /[?&]partNumber(=|&|$)/.test(request.target)) {
        counts[request.instance]++;
      }
    }
    return counts;
  };
  const before = await count();
  await work();
  return (await count()).map((n, i) => n - before[i]);
}

/** Writes `size` random bytes to `path` in 1 MiB pieces; answers their sha256 (hex). */
export async function writeRandomFile(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const piece = new Uint8Array(1 << 20);
  for (let written = 0; written < size; written += piece.length) {
    const chunk = piece.subarray(0, Math.min(piece.length, size - written));
    for (let at = 0; at < chunk.length; at += 65536) {
      crypto.getRandomValues(chunk.subarray(at, Math.min(chunk.length, at + 65536)));
    }
    hash.update(chunk);
    let done = 0;
    while (done < chunk.length) done += await file.write(chunk.subarray(done));
  }
  return hash.digest("hex");
}

/** The sha256 (hex) of a file, read as a stream. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(path);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}
