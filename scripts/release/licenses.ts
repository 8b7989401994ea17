/**
 * The licenses of the npm packages svc bundles: into the binary (the server's production
 * dependencies and everything they depend on) and into the admin UI's JavaScript (what esbuild
 * pulls from node_modules). Read from the installed packages (package.json and LICENSE files),
 * with package-lock.json saying which packages are production dependencies.
 */

const ROOT = new URL("../../", import.meta.url).pathname;

export interface PackageLicense {
  name: string;
  version: string;
  /** SPDX expression from package.json (or the lock file), e.g. `MIT`. */
  license: string;
  /** Where the package comes from, when it says. */
  homepage?: string;
  /** The package's license file(s), verbatim; undefined when it has none or is not installed. */
  text?: string;
  /** False for a package of another platform, not installed in this checkout. */
  installed: boolean;
}

interface LockEntry {
  version?: string;
  license?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

/** Type declarations only: never part of the binary. */
const TYPES_ONLY = /^(@types\/|undici-types$)/;

/** Targets svc releases for, as npm's os/cpu/libc of native packages. */
export const RELEASE_PLATFORMS = [
  { os: "linux", cpu: "x64", libc: "glibc" },
  { os: "linux", cpu: "arm64", libc: "glibc" },
] as const;

function bundledOnRelease(name: string, entry: LockEntry): boolean {
  // The lock records no libc for some native packages; their names say it.
  if (/-musl(eabihf)?$/.test(name)) return false;
  if (!entry.os && !entry.cpu) return true;
  return RELEASE_PLATFORMS.some((p) =>
    (!entry.os || entry.os.includes(p.os)) && (!entry.cpu || entry.cpu.includes(p.cpu)) &&
    (!entry.libc || entry.libc.includes(p.libc))
  );
}

/**
 * The server's bundled packages: every production package of the lock file, except type
 * declarations and native packages for platforms svc is not released for.
 */
export async function serverPackages(root = ROOT): Promise<string[]> {
  const lock = JSON.parse(await Deno.readTextFile(`${root}package-lock.json`)) as {
    packages: Record<string, LockEntry>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith("node_modules/") && !entry.dev)
    .map(([path]) => path.slice("node_modules/".length))
    .filter((name) => !name.includes("/node_modules/") && !TYPES_ONLY.test(name))
    .filter((name) => bundledOnRelease(name, lock.packages[`node_modules/${name}`]))
    .sort();
}

/** The npm package a bundled file belongs to (`node_modules/preact/hooks/…` → `preact`). */
export function packageOfPath(path: string): string | undefined {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
  return match?.[1];
}

const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\.(md|txt|markdown))?$/i;

/** One package's license, from its installed files (the lock file when it is not installed). */
export async function packageLicense(name: string, root = ROOT): Promise<PackageLicense> {
  const dir = `${root}node_modules/${name}`;
  let manifest: { version?: string; license?: unknown; homepage?: string } | undefined;
  try {
    manifest = JSON.parse(await Deno.readTextFile(`${dir}/package.json`));
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  if (manifest === undefined) {
    const lock = JSON.parse(await Deno.readTextFile(`${root}package-lock.json`));
    const entry = lock.packages[`node_modules/${name}`] as LockEntry | undefined;
    if (!entry) throw new Error(`Package "${name}" is neither installed nor in package-lock.json`);
    return {
      name,
      version: entry.version ?? "?",
      license: entry.license ?? "UNKNOWN",
      installed: false,
    };
  }
  const texts: string[] = [];
  const files = [...Deno.readDirSync(dir)].filter((e) => e.isFile && LICENSE_FILE.test(e.name))
    .map((e) => e.name).sort();
  for (const file of files) texts.push((await Deno.readTextFile(`${dir}/${file}`)).trim());
  const license = typeof manifest.license === "string"
    ? manifest.license
    : (manifest.license as { type?: string } | undefined)?.type ?? "UNKNOWN";
  return {
    name,
    version: manifest.version ?? "?",
    license,
    homepage: manifest.homepage,
    text: texts.length > 0 ? texts.join("\n\n") : undefined,
    installed: true,
  };
}

/** A plain-text notice for these packages: name, version, license and the license text. */
export function formatNotices(title: string, packages: PackageLicense[]): string {
  const parts = [title, ""];
  for (const p of packages) {
    parts.push("-".repeat(72));
    parts.push(`${p.name} ${p.version} (${p.license})${p.homepage ? ` ${p.homepage}` : ""}`);
    parts.push("");
    parts.push(
      p.text ??
        (p.installed
          ? `The package ships no license file; its package.json declares ${p.license}.`
          : `A native package for another platform, not installed in this checkout; it is ` +
            `published under ${p.license}.`),
    );
    parts.push("");
  }
  return parts.join("\n");
}
