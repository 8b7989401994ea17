/**
 * One svc per data directory. Two processes on one directory corrupt each other's state: the
 * second opened the config database, re-queued the first one's running job and only then failed
 * to bind the port, leaving the first one's job stuck on SQLITE_BUSY. So before anything else is
 * opened, svc locks `<dir>/.svc/svc.lock` in its state directory and in the directory of every
 * filesystem backend, and refuses to start, naming the holder's pid, where another process holds
 * one. The kernel releases the locks when the process ends, however it ends.
 */
import { backendPlanOf, type Config, stateDirOf } from "../config/mod.ts";
import { tryLockFile } from "../native/mod.ts";

export class DataDirectoryInUse extends Error {
  constructor(readonly dir: string, readonly holderPid: number | null) {
    super(
      `Data directory "${dir}" is in use by another svc` +
        `${holderPid === null ? "" : ` (pid ${holderPid})`}: stop it first, or start this one ` +
        `on another directory`,
    );
    this.name = "DataDirectoryInUse";
  }
}

export interface DataDirectoryLocks {
  /** The directories locked, as configured. */
  dirs: string[];
  release(): void;
}

/** The directories a config makes svc write to: the state directory and filesystem backends. */
export function dataDirectoriesOf(config: Config): string[] {
  const dirs = [stateDirOf(config)];
  for (const spec of backendPlanOf(config).specs) {
    if (spec.type === "filesystem" && spec.path !== undefined) dirs.push(spec.path);
  }
  return dirs;
}

/** Locks every data directory of `config`, or throws DataDirectoryInUse (releasing any taken). */
export async function lockDataDirectories(config: Config): Promise<DataDirectoryLocks> {
  const held: (() => void)[] = [];
  const seen = new Set<string>();
  const dirs: string[] = [];
  try {
    for (const dir of dataDirectoriesOf(config)) {
      await Deno.mkdir(`${dir}/.svc`, { recursive: true, mode: 0o700 });
      const real = await Deno.realPath(dir);
      if (seen.has(real)) continue;
      seen.add(real);
      const result = tryLockFile(`${real}/.svc/svc.lock`);
      if (!result.locked) throw new DataDirectoryInUse(dir, result.holderPid);
      held.push(result.release);
      dirs.push(dir);
    }
  } catch (err) {
    for (const release of held) release();
    throw err;
  }
  return { dirs, release: () => held.forEach((release) => release()) };
}
