/** `svc admin …` run as a subprocess of this checkout, for the CLI's black-box tests. */
const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc admin <args>` with only `env` (and PATH), `stdin` piped in when given. */
export async function runAdminCli(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<CliRun> {
  const child = new Deno.Command(DENO, {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "admin", ...args],
    env: { DENO_NO_UPDATE_CHECK: "1", PATH: Deno.env.get("PATH") ?? "", ...env },
    clearEnv: true,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
