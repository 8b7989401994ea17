/**
 * The idle multipart sweeper: at start and every 15 minutes, uploads idle longer than
 * `multipart_idle_ttl_hours` are removed. Each run is measured (svc_multipart_sweep_*): phase
 * `startup` or `periodic`; reclaimed uploads are counted under state `idle`.
 *
 * In a fleet every instance sweeps every S3 bucket's backend-resident uploads too; each idle upload
 * is claimed before it is removed (objects/multipart/backend-uploads.ts), so instances sweeping at
 * once neither fail nor count an upload twice, and deletes of keys already gone are no error.
 */
import type { MultipartService } from "../objects/mod.ts";
import { getLogger, type Metrics } from "../observability/mod.ts";

const log = getLogger("svc::multipart");

/** How often idle multipart uploads are looked for. */
export const SWEEP_INTERVAL_MS = 15 * 60 * 1000;

export type SweepPhase = "startup" | "periodic";

export async function sweepOnce(
  multipart: MultipartService,
  metrics: Pick<Metrics, "sweep">,
  phase: SweepPhase,
): Promise<void> {
  const started = performance.now();
  try {
    const result = await multipart.sweep();
    metrics.sweep.runs.inc({ phase });
    metrics.sweep.sweptUploads.inc({ state: "idle" }, result.count);
    metrics.sweep.reclaimedBytes.inc(result.bytes);
    metrics.sweep.lastUploadsReclaimed.set(result.count);
    metrics.sweep.lastReclaimedBytes.set(result.bytes);
    if (result.count > 0) {
      log.info("swept idle multipart uploads", { uploads: result.count, bytes: result.bytes });
    }
  } catch (err) {
    log.error("multipart sweep failed", { phase, error: String(err) });
  } finally {
    metrics.sweep.duration.observe({ phase }, (performance.now() - started) / 1000);
  }
}

/** Sweeps once now, then every SWEEP_INTERVAL_MS; returns the stop function. */
export async function startSweeper(
  multipart: MultipartService,
  metrics: Pick<Metrics, "sweep">,
): Promise<() => void> {
  await sweepOnce(multipart, metrics, "startup");
  const timer = setInterval(() => sweepOnce(multipart, metrics, "periodic"), SWEEP_INTERVAL_MS);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
