/**
 * Where a benchmark's garbage comes from: V8's sampling heap profiler (through node:inspector)
 * counting every sampled allocation, including objects a scavenge or mark-compact already freed,
 * summed per allocating function. Used by `--alloc-profile` in the listing-heavy benches.
 */
import { Session } from "node:inspector";

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

export interface AllocProfile {
  /** Stops sampling and returns the top allocating functions, bytes per `unit` of work. */
  stop(units: number, top?: number): Promise<string>;
}

export async function startAllocProfile(samplingInterval = 4096): Promise<AllocProfile> {
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) =>
      session.post(method, params, (err, result) => err ? reject(err) : resolve(result as T))
    );
  await post("HeapProfiler.startSampling", {
    samplingInterval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return {
    async stop(units, top = 20) {
      const { profile } = await post<{ profile: { head: ProfileNode } }>(
        "HeapProfiler.stopSampling",
      );
      session.disconnect();
      const bySite = new Map<string, number>();
      let total = 0;
      const visit = (node: ProfileNode) => {
        const frame = node.callFrame;
        const site = `${frame.functionName || "(anonymous)"} ${
          frame.url.split("/").slice(-2).join("/")
        }:${frame.lineNumber + 1}`;
        if (node.selfSize > 0) {
          bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
          total += node.selfSize;
        }
        for (const child of node.children) visit(child);
      };
      visit(profile.head);
      const rows = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top);
      return [
        `allocated ${(total / 2 ** 20).toFixed(0)} MiB, ${(total / units).toFixed(0)} B per unit`,
        ...rows.map(([site, bytes]) => `${(bytes / units).toFixed(0).padStart(7)} B  ${site}`),
      ].join("\n");
    },
  };
}
