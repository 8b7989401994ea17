/**
 * Runs main.ts as a one-shot subprocess the way an operator does: a fresh temp directory holding
 * `files` as the working directory and a clean environment (PATH, HOME, DENO_NO_UPDATE_CHECK,
 * plus `extraEnv`). For commands that exit (CLI subcommands, startup refusals).
 */
const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** Entries left in the working directory after the run. */
  entries: string[];
}

export async function runSvc(
  args: string[],
  files: Record<string, string> = {},
  extraEnv: Record<string, string> = {},
): Promise<Run> {
  const cwd = await Deno.makeTempDir({ prefix: "svc-cli-test-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${cwd}/${name}`, text);
    }
    const env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1", ...extraEnv };
    for (const name of ["PATH", "HOME"]) {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] = value;
    }
    const output = await new Deno.Command(DENO, {
      args: ["run", "--allow-all", `${ROOT}main.ts`, ...args],
      cwd,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      // A refusal that did not happen would leave a server running; never wait for it forever.
      signal: AbortSignal.timeout(60_000),
    }).output();
    const entries: string[] = [];
    for await (const entry of Deno.readDir(cwd)) entries.push(entry.name);
    const decoder = new TextDecoder();
    return {
      code: output.code,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
      entries: entries.sort(),
    };
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
}
