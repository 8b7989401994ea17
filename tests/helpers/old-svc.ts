/**
 * An older svc from this repository's own git history, for the upgrade test: `git archive` of a
 * commit into a temp dir (with today's node_modules linked in) and a server started from it on a
 * given data dir, with the environment tests/helpers/svc.ts gives today's servers. The history is
 * read at test time, so the data dir the test upgrades is written by the real old code.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { ADMIN_PASSWORD_HASH } from "./admin.ts";
import { ACCESS_KEY, SECRET_KEY } from "./svc.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

function git(...args: string[]): { ok: boolean; out: string } {
  try {
    const result = new Deno.Command("git", { args: ["-C", ROOT, ...args], stderr: "piped" })
      .outputSync();
    const text = new TextDecoder().decode(result.success ? result.stdout : result.stderr);
    return { ok: result.success, out: text.trim() };
  } catch (err) {
    return { ok: false, out: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Why `commit` cannot be checked out here (no git, not a git checkout, a shallow clone without
 * that commit), or undefined when it can.
 */
export function historyProblem(commit: string): string | undefined {
  const inside = git("rev-parse", "--is-inside-work-tree");
  if (!inside.ok) return `no git history here (${inside.out})`;
  const found = git("cat-file", "-e", `${commit}^{commit}`);
  if (found.ok) return undefined;
  const shallow = git("rev-parse", "--is-shallow-repository").out === "true";
  return `commit ${commit} is not in this ${shallow ? "shallow " : ""}clone`;
}

export interface OldTree {
  dir: string;
  commit: string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The files of `commit` in a temp dir, node_modules linked to today's. */
export async function checkoutTree(commit: string): Promise<OldTree> {
  const dir = await Deno.makeTempDir({ prefix: `svc-old-${commit.slice(0, 7)}-` });
  const result = await new Deno.Command("sh", {
    args: ["-c", 'git -C "$1" archive "$2" | tar -x -C "$3"', "sh", ROOT, commit, dir],
    stderr: "piped",
  }).output();
  if (!result.success) {
    await Deno.remove(dir, { recursive: true });
    throw new Error(
      `git archive ${commit} failed: ${new TextDecoder().decode(result.stderr).trim()}`,
    );
  }
  await Deno.symlink(await Deno.realPath(`${ROOT}node_modules`), `${dir}/node_modules`);
  return {
    dir,
    commit,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}

export interface OldSvc {
  url: string;
  logs: string[];
  client(): S3Client;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

async function pump(
  stream: ReadableStream<Uint8Array>,
  logs: string[],
  onLine: (l: string) => void,
) {
  let buffered = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
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

/**
 * Starts the old tree's main.ts on `dataDir` (the way tests/helpers/svc.ts starts today's: same
 * credentials, bootstrap password hash and replay window) and waits until it listens.
 */
export async function startOldSvc(
  tree: OldTree,
  options: { dataDir: string; args?: string[]; env?: Record<string, string> },
): Promise<OldSvc> {
  const logs: string[] = [];
  const child = new Deno.Command(DENO, {
    args: [
      "run",
      "--allow-all",
      `${tree.dir}/main.ts`,
      "--listen",
      "127.0.0.1:0",
      ...options.args ?? [],
    ],
    cwd: options.dataDir,
    env: {
      DENO_NO_UPDATE_CHECK: "1",
      SVC_DATA_DIR: options.dataDir,
      SVC_ACCESS_KEY_ID: ACCESS_KEY,
      SVC_SECRET_ACCESS_KEY: SECRET_KEY,
      SVC_LOG_LEVEL: "info",
      SVC_REPLAY_WINDOW_SECS: "0",
      SVC_BOOTSTRAP_PASSWORD_HASH: ADMIN_PASSWORD_HASH,
      // Its transpiled modules go with the tree, not into the shared cache under a path that is
      // new every run.
      DENO_DIR: `${tree.dir}/.deno-cache`,
      ...options.env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let resolvePort!: (port: number) => void;
  const listening = new Promise<number>((resolve) => resolvePort = resolve);
  const onLine = (line: string) => {
    const match = /listening on http:\/\/[^:]+:(\d+)/.exec(line);
    if (match) resolvePort(Number(match[1]));
  };
  const pumps = Promise.all([pump(child.stdout, logs, onLine), pump(child.stderr, logs, onLine)]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failed = Promise.race([
    child.status.then((status) => {
      throw new Error(`svc ${tree.commit} exited (${status.code}) before listening`);
    }),
    // Its first start transpiles the whole old tree: allow more than today's 30 s.
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`svc ${tree.commit} did not start`)), 90_000);
    }),
  ]);
  let port: number;
  try {
    port = await Promise.race([listening, failed]);
  } catch (err) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await pumps.catch(() => {});
    throw new Error(`${(err as Error).message}:\n${logs.join("\n")}`);
  } finally {
    clearTimeout(timer);
  }
  failed.catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await pumps.catch(() => {});
  };
  return {
    url,
    logs,
    client: () =>
      new S3Client({
        endpoint: url,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
      }),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
