/**
 * What `svc --version` prints: the release, the git commit it was built from and the Deno runtime.
 * compile.sh writes the commit into build-info.json beside this file and embeds it with
 * `--include`; from a source checkout that file is absent and git is asked instead, so a stale
 * file can never outlive the build that wrote it (compile.sh removes it afterwards).
 */
import { VERSION } from "../lib/mod.ts";

/** The generated file compile.sh embeds; never committed (see .gitignore). */
export const BUILD_INFO_URL = new URL("./build-info.json", import.meta.url);

export interface VersionInfo {
  version: string;
  commit: string;
  deno: string;
}

export async function versionInfo(): Promise<VersionInfo> {
  return {
    version: VERSION,
    commit: await embeddedCommit() ?? await checkoutCommit() ?? "unknown",
    deno: Deno.version.deno,
  };
}

export function formatVersion(info: VersionInfo): string {
  return `svc ${info.version}\ncommit ${info.commit}\ndeno ${info.deno}`;
}

async function embeddedCommit(): Promise<string | undefined> {
  let commit: unknown;
  try {
    commit = (JSON.parse(await Deno.readTextFile(BUILD_INFO_URL)) as { commit?: unknown }).commit;
  } catch {
    return undefined; // running from source: no build happened
  }
  return typeof commit === "string" && commit !== "" ? commit : undefined;
}

/** `git rev-parse --short HEAD` in the checkout holding this file; undefined without git or repo. */
async function checkoutCommit(): Promise<string | undefined> {
  if (BUILD_INFO_URL.protocol !== "file:") return undefined;
  try {
    const output = await new Deno.Command("git", {
      args: ["rev-parse", "--short", "HEAD"],
      cwd: new URL(".", BUILD_INFO_URL).pathname,
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    const commit = new TextDecoder().decode(output.stdout).trim();
    return output.success && commit !== "" ? commit : undefined;
  } catch {
    return undefined; // git not installed, or the directory is not on disk (a compiled binary)
  }
}
