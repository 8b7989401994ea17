/**
 * Process and build metrics. prom-client's `collectDefaultMetrics` is not used: under Deno it
 * reports nodejs_* series with nonsense values (event-loop lag min 9.2e9 s, mean NaN, a Node
 * version Deno only emulates). The standard process_* series are read from /proc/self on Linux
 * instead; elsewhere only process_start_time_seconds and process_peak_rss_bytes exist. No
 * svc_tokio_* series.
 */
import process from "node:process";
import { Counter } from "prom-client";
import type { MetricRegistry } from "./metric-registry.ts";

type ProcField = "rss" | "peakRss" | "virtual" | "threads" | "openFds" | "maxFds";
type ProcSnapshot = Partial<Record<ProcField, number>>;

/** Field `name` of /proc/self/status in bytes (values there are in kB). */
function statusBytes(status: string, name: string): number | undefined {
  const match = new RegExp(`^${name}:\\s+(\\d+)\\s*kB`, "m").exec(status);
  return match ? Number(match[1]) * 1024 : undefined;
}

async function readProc(): Promise<ProcSnapshot> {
  const snapshot: ProcSnapshot = {};
  const status = await Deno.readTextFile("/proc/self/status").catch(() => "");
  snapshot.rss = statusBytes(status, "VmRSS");
  snapshot.peakRss = statusBytes(status, "VmHWM");
  snapshot.virtual = statusBytes(status, "VmSize");
  const threads = /^Threads:\s+(\d+)/m.exec(status);
  if (threads) snapshot.threads = Number(threads[1]);
  try {
    let fds = 0;
    for await (const _ of Deno.readDir("/proc/self/fd")) fds++;
    snapshot.openFds = fds;
  } catch { /* no /proc: leave unset */ }
  const limits = await Deno.readTextFile("/proc/self/limits").catch(() => "");
  const maxFiles = /^Max open files\s+(\d+)/m.exec(limits);
  if (maxFiles) snapshot.maxFds = Number(maxFiles[1]);
  return snapshot;
}

/** Registers the family; the answer refreshes the process gauges (called before each scrape). */
export function processMetrics(
  { gauge, registers }: MetricRegistry,
  build: { version: string; backendType: string },
): () => Promise<void> {
  const linux = Deno.build.os === "linux";
  gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")
    .set(performance.timeOrigin / 1000);
  gauge("svc_build_info", "Build information; always 1.", ["version", "backend_type"])
    .set({ version: build.version, backend_type: build.backendType }, 1);
  const peakRss = gauge("process_peak_rss_bytes", "Peak resident set size in bytes.");
  const processGauges = linux
    ? {
      rss: gauge("process_resident_memory_bytes", "Resident memory size in bytes."),
      virtual: gauge("process_virtual_memory_bytes", "Virtual memory size in bytes."),
      openFds: gauge("process_open_fds", "Number of open file descriptors."),
      maxFds: gauge("process_max_fds", "Maximum number of open file descriptors."),
      threads: gauge("process_threads", "Number of OS threads in the process."),
    }
    : undefined;
  if (linux) {
    new Counter({
      name: "process_cpu_seconds_total",
      help: "Total user and system CPU time spent in seconds.",
      registers,
      collect() {
        const { user, system } = process.cpuUsage();
        this.reset();
        this.inc((user + system) / 1e6);
      },
    });
  }
  let peakSeen = 0;
  return async () => {
    const proc = linux ? await readProc() : {};
    peakSeen = Math.max(peakSeen, proc.peakRss ?? 0, proc.rss ?? Deno.memoryUsage().rss);
    peakRss.set(peakSeen);
    if (!processGauges) return;
    for (const name of ["rss", "virtual", "openFds", "maxFds", "threads"] as const) {
      const value = proc[name];
      if (value !== undefined) processGauges[name].set(value);
    }
  };
}
