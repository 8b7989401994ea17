/** Shared pieces of the benchmarks: starting servers, timing, reading peak RSS. */

const ROOT = new URL("../../", import.meta.url).pathname;
export const DENO = `${ROOT}node_modules/.bin/deno`;

export interface Started {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts a Deno script that prints "listening on http://host:port" and waits for that line. */
export async function startProcess(
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
): Promise<Started> {
  const child = new Deno.Command(DENO, {
    args: ["run", "--allow-all", ...args],
    env: { DENO_NO_UPDATE_CHECK: "1", ...env },
    cwd,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const decoder = new TextDecoder();
  let seen = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listen line:\n${seen}`)), 30_000);
    for (const stream of [child.stdout, child.stderr]) {
      (async () => {
        for await (const chunk of stream) {
          seen += decoder.decode(chunk);
          const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(seen);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        }
      })();
    }
  });
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** VmHWM of a process in bytes: its peak resident set so far. */
export async function peakRss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : NaN;
}

/** A stream of `size` bytes made of one repeated random 1 MiB block (cheap to produce). */
export function generatedBody(size: number, chunk = 1 << 20): ReadableStream<Uint8Array> {
  const block = new Uint8Array(chunk);
  for (let i = 0; i < chunk; i += 65536) crypto.getRandomValues(block.subarray(i, i + 65536));
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(chunk, size - sent);
      controller.enqueue(n === chunk ? block.slice() : block.slice(0, n));
      sent += n;
    },
  });
}

export async function drain(body: ReadableStream<Uint8Array> | null): Promise<number> {
  let total = 0;
  if (!body) return 0;
  for await (const chunk of body) total += chunk.byteLength;
  return total;
}

export async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { seconds: (performance.now() - start) / 1000, value };
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}
