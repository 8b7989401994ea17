/**
 * The AWS CLI (`aws`) against a test server, in a clean environment: a temp HOME and
 * AWS_CONFIG_FILE (path-style addressing), credentials from the environment only, one attempt,
 * no pager, so no user configuration applies. Tests that use it skip cleanly when it is missing.
 */
import { ACCESS_KEY, SECRET_KEY } from "./svc.ts";

/** Whether the AWS CLI runs here. */
export async function awsAvailable(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("aws", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success;
  } catch {
    return false;
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface AwsCli extends AsyncDisposable {
  /** The temp directory the CLI runs in (its HOME and cwd): put files to upload here. */
  work: string;
  /** The default config file (path-style addressing). */
  config: string;
  /** Runs `aws --endpoint-url <url> ...args`; `secret` and `configFile` override the defaults. */
  run(args: string[], options?: { secret?: string; configFile?: string }): Promise<CliResult>;
}

export async function awsCli(
  url: string,
  credentials: { accessKeyId: string; secretAccessKey: string } = {
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
  },
): Promise<AwsCli> {
  const work = await Deno.makeTempDir({ prefix: "svc-awscli-" });
  const home = `${work}/home`;
  await Deno.mkdir(home);
  const config = `${work}/config`;
  await Deno.writeTextFile(config, "[default]\ns3 =\n  addressing_style = path\n");
  return {
    work,
    config,
    async run(args, options = {}) {
      const output = await new Deno.Command("aws", {
        args: ["--endpoint-url", url, ...args],
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          HOME: home,
          AWS_CONFIG_FILE: options.configFile ?? config,
          AWS_SHARED_CREDENTIALS_FILE: `${work}/no-credentials`,
          AWS_ACCESS_KEY_ID: credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: options.secret ?? credentials.secretAccessKey,
          AWS_DEFAULT_REGION: "us-east-1",
          AWS_EC2_METADATA_DISABLED: "true",
          AWS_MAX_ATTEMPTS: "1",
          AWS_PAGER: "",
        },
        clearEnv: true,
        cwd: work,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const decode = (b: Uint8Array) => new TextDecoder().decode(b);
      return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
    },
    async [Symbol.asyncDispose]() {
      await Deno.remove(work, { recursive: true }).catch(() => {});
    },
  };
}
