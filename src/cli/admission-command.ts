/**
 * `svc admission trace --config <file> [--method GET] (--path /bucket/key[?query] | --bucket b
 * [--key k]) [--source-ip <ip>] [--authenticated] [--json]`: which admission block of a config
 * file decides a request, offline (no server). The file is judged alone, as `svc config lint`
 * does: `${env:NAME}` placeholders are expanded but `SVC_*` overrides are not applied. It runs
 * the same chain and decision as the server (src/admission/trace.ts).
 *
 * Prints the explanation (and the block) on stdout; `--json` prints the whole trace as JSON.
 * Exit codes: 0 traced (whatever the outcome), 2 usage or a bad synthetic request, 3 the file
 * cannot be read, 4 parse error, 6 invalid config.
 */
import { traceAdmission, type TraceInput, TraceInputError } from "../admission/mod.ts";
import { loadConfig, parseDocument } from "../config/mod.ts";
import { EXIT, isParseError, lintEnvironment } from "./config-command.ts";
import { type CommandIo, defaultIo } from "./command-io.ts";

export const ADMISSION_USAGE = `Usage:
  svc admission trace --config <file> [--method GET] --path /bucket/key[?query]
                      [--source-ip <ip>] [--authenticated] [--json]
  svc admission trace --config <file> [--method GET] --bucket <b> [--key <k>] [...]

Says which admission block decides the request (first match wins) or that none matched and the
request goes on to authentication. --authenticated: the request carries a signature.
Exit codes: 0 traced, 2 usage, 3 I/O error, 4 parse error, 6 invalid config.`;

class UsageError extends Error {}

const VALUE_FLAGS: Record<string, keyof TraceInput | "config"> = {
  "--config": "config",
  "--method": "method",
  "--path": "path",
  "--bucket": "bucket",
  "--key": "key",
  "--source-ip": "sourceIp",
};

function parseTraceArgs(args: string[]): { config: string; input: TraceInput; json: boolean } {
  const values: Record<string, string> = {};
  let authenticated = false;
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (flag === "--authenticated") authenticated = true;
    else if (flag === "--json") json = true;
    else if (Object.hasOwn(VALUE_FLAGS, flag)) {
      const value = eq > 0 && flag !== arg ? arg.slice(eq + 1) : args[++i];
      if (value === undefined || value === "") throw new UsageError(`${flag} needs a value`);
      values[VALUE_FLAGS[flag]] = value;
    } else throw new UsageError(`Unexpected argument "${arg}"`);
  }
  if (values.config === undefined) throw new UsageError("admission trace needs --config <file>");
  if (values.path === undefined && values.bucket === undefined) {
    throw new UsageError("admission trace needs --path or --bucket");
  }
  return {
    config: values.config,
    json,
    input: {
      method: values.method ?? "GET",
      path: values.path,
      bucket: values.bucket,
      key: values.key,
      sourceIp: values.sourceIp,
      authenticated,
    },
  };
}

/** `svc admission trace …`; returns the exit code. */
export async function traceCommand(args: string[], io: CommandIo): Promise<number> {
  let parsed: ReturnType<typeof parseTraceArgs>;
  try {
    parsed = parseTraceArgs(args);
  } catch (err) {
    io.stderr(`svc: ${(err as Error).message}\n${ADMISSION_USAGE}`);
    return EXIT.usage;
  }
  let text: string;
  try {
    text = await Deno.readTextFile(parsed.config);
  } catch (err) {
    io.stderr(`svc: cannot read config file "${parsed.config}": ${(err as Error).message}`);
    return EXIT.io;
  }
  try {
    parseDocument(text, parsed.config);
  } catch (err) {
    io.stderr(`svc: ${(err as Error).message}`);
    return EXIT.parse;
  }
  let loaded: Awaited<ReturnType<typeof loadConfig>>;
  try {
    loaded = await loadConfig({ configPath: parsed.config, env: lintEnvironment(io.env, text) });
  } catch (err) {
    io.stderr(`svc: ${(err as Error).message}`);
    return isParseError(err) ? EXIT.parse : EXIT.validation;
  }
  let result: ReturnType<typeof traceAdmission>;
  try {
    result = traceAdmission(loaded.config, parsed.input);
  } catch (err) {
    if (!(err instanceof TraceInputError)) throw err;
    io.stderr(`svc: ${err.message}`);
    return EXIT.usage;
  }
  for (const warning of result.warnings) io.stderr(`warning: ${warning}`);
  if (parsed.json) {
    io.stdout(JSON.stringify(result, null, 2));
    return EXIT.ok;
  }
  const { request } = result;
  const target = request.bucket === null
    ? "/"
    : `/${request.bucket}${request.key === null ? "" : `/${request.key}`}`;
  io.stdout(
    `${request.method} ${target} (${request.kind}, ${
      request.authenticated ? "signed" : "unsigned"
    }${request.source_ip ? `, from ${request.source_ip}` : ""})`,
  );
  io.stdout(`outcome: ${result.outcome}${result.status ? ` (${result.status})` : ""}`);
  io.stdout(result.explanation);
  return EXIT.ok;
}

/** Dispatches `svc admission <args>`; returns the exit code. */
export async function runAdmissionCommand(
  args: string[],
  io: CommandIo = defaultIo(),
): Promise<number> {
  const [command, ...rest] = args;
  const help = rest.includes("--help") || rest.includes("-h");
  if (command === "trace" && !help) return await traceCommand(rest, io);
  if (command === "--help" || command === "-h" || command === "help" || help) {
    io.stdout(ADMISSION_USAGE);
    return EXIT.ok;
  }
  io.stderr(
    `svc: ${
      command ? `unknown admission command "${command}"` : "missing admission command"
    }\n${ADMISSION_USAGE}`,
  );
  return EXIT.usage;
}
