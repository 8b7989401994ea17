/**
 * The boot backend probe (`SVC_BOOT_BACKEND_PROBE`) and what follows from it. At startup each
 * backend is asked to list its buckets, bounded by a timeout:
 *
 * - `enforce` refuses to start when every backend fails (one working backend is enough to
 *   serve its buckets);
 * - `warn` starts whatever happens;
 * - `off` does not probe: every backend counts as available.
 *
 * With `enforce` and `warn`, a backend that failed is marked unavailable: the buckets it serves
 * answer 503 instead of a slow error per request, and it is probed again every 30 seconds until a
 * probe succeeds.
 */

import { getLogger } from "../observability/mod.ts";
import { withTimeout } from "../lib/mod.ts";
import type { Backend } from "./backend.ts";

const log = getLogger("svc::storage");

export type ProbeMode = "enforce" | "warn" | "off";

export const REPROBE_INTERVAL_MS = 30_000;

export interface ProbedBackend {
  name: string;
  backend: Backend;
}

export interface ProbeReport {
  name: string;
  ok: boolean;
  error?: string;
}

export class BackendHealth {
  readonly #backends: ProbedBackend[];
  readonly #timeoutMs: number;
  readonly #unavailable = new Map<string, string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #probing = false;

  constructor(backends: ProbedBackend[], timeoutMs: number) {
    this.#backends = backends;
    this.#timeoutMs = timeoutMs;
  }

  available(name: string): boolean {
    return !this.#unavailable.has(name);
  }

  /** Probes every backend once (concurrently); failures become unavailable. */
  async probe(): Promise<ProbeReport[]> {
    return await Promise.all(this.#backends.map((entry) => this.#probeOne(entry)));
  }

  async #probeOne({ name, backend }: ProbedBackend): Promise<ProbeReport> {
    try {
      await withTimeout(backend.listBuckets(), this.#timeoutMs);
      if (this.#unavailable.delete(name)) log.info(`Backend "${name}" is available again`);
      return { name, ok: true };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      if (!this.#unavailable.has(name)) {
        log.warn(`Backend "${name}" failed its probe; its buckets answer 503 until it recovers`, {
          error,
        });
      }
      this.#unavailable.set(name, error);
      return { name, ok: false, error };
    }
  }

  /** Re-probes the unavailable backends every `intervalMs`; returns the stop function. */
  startReprobe(intervalMs = REPROBE_INTERVAL_MS): () => void {
    this.#timer = setInterval(async () => {
      if (this.#probing || this.#unavailable.size === 0) return;
      this.#probing = true;
      try {
        const failed = this.#backends.filter((entry) => this.#unavailable.has(entry.name));
        await Promise.all(failed.map((entry) => this.#probeOne(entry)));
      } finally {
        this.#probing = false;
      }
    }, intervalMs);
    Deno.unrefTimer(this.#timer);
    return () => clearInterval(this.#timer);
  }
}

/**
 * Runs the boot probe in `mode`. Returns null when the service may start, or the reason it must
 * not (enforce, every backend failed).
 */
export async function bootProbe(health: BackendHealth, mode: ProbeMode): Promise<string | null> {
  if (mode === "off") return null;
  const reports = await health.probe();
  if (mode === "enforce" && reports.every((report) => !report.ok)) {
    const detail = reports.map((r) => `"${r.name}": ${r.error}`).join("; ");
    return `every backend failed the boot probe (${detail}); set SVC_BOOT_BACKEND_PROBE=warn ` +
      "to start anyway";
  }
  return null;
}
