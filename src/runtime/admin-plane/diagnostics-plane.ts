/**
 * The diagnostics of the admin plane (docs/DELTA.md "Diagnostics"): the delta-efficiency report
 * and verify, and the integrity scan (scrub), over the storage stack in use (read through
 * `services.storage` each time: a config change may replace it). Both read the bucket router,
 * the backend below the delta layer, and rebuild deltas with their own codec runs (the codec
 * that wrote each delta) in the delta store's codec pool, so no cache answers for the stored bytes.
 *
 * Settings (environment; docs/DELTA.md): `SVC_SCRUB_BYTES_PER_SEC` (default 16 MiB/s, 0 =
 * unpaced; a start may give its own `bytes_per_sec`) and `SVC_SCRUB_MAX_FINDINGS` (default 1000).
 * The scan's state is `<state dir>/.svc/scrub-state.json`; scratch files go to
 * `<state dir>/.svc/scrub/` (emptied at start).
 */
import { privateDir, SvcError } from "../../lib/mod.ts";
import {
  CodecSet,
  decodedSizeOf,
  decodeTransformed,
  deriveTokenForm,
  probeXdelta3,
  Xdelta3Codec,
} from "../../delta/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import {
  type DeltaDecoder,
  EfficiencyReports,
  type RawBackend,
  scanBucketEfficiency,
  Scrubber,
  verifyDeltas,
} from "../../objects/mod.ts";
import type { Services } from "../services.ts";

export const DEFAULT_SCRUB_BYTES_PER_SEC = 16 * 1024 * 1024;
export const DEFAULT_SCRUB_MAX_FINDINGS = 1000;

/** A whole number from the environment; anything else gives the default (as maintenance pacing). */
function envInt(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback;
}

/**
 * Runs `work` on the baseline as the codecs use it: its stored bytes, or for a baseline with a
 * `baselineForm` (an archive kept as it is) the token form derived into a scratch file.
 */
async function withBaselineForm<T>(
  scratchDir: string,
  base: string,
  form: string | undefined,
  signal: AbortSignal,
  work: (base: string) => Promise<T>,
): Promise<T> {
  if (form === undefined) return await work(base);
  const derived = await Deno.makeTempFile({ dir: scratchDir, prefix: "form-" });
  try {
    await deriveTokenForm(base, derived, signal);
    return await work(derived);
  } finally {
    await Deno.remove(derived).catch(() => {});
  }
}

export async function openDiagnosticsPlane(
  services: Services,
  audit: AuditFn,
  env: Record<string, string | undefined>,
) {
  const bytesPerSec = envInt(env, "SVC_SCRUB_BYTES_PER_SEC", DEFAULT_SCRUB_BYTES_PER_SEC);
  const maxFindings = Math.max(
    1,
    envInt(env, "SVC_SCRUB_MAX_FINDINGS", DEFAULT_SCRUB_MAX_FINDINGS),
  );
  const stateDir = services.storage.stateDir;
  const scratchDir = `${stateDir}/.svc/scrub`;
  await Deno.remove(scratchDir, { recursive: true }).catch(() => {});
  await privateDir(scratchDir);
  const probe = await probeXdelta3();
  const codec = new Xdelta3Codec({ tempDir: scratchDir, acceptsA: probe.acceptsA });
  const metrics = services.metrics.diagnostics;
  // Read through the stack in use at each call: a config change may replace it mid-scan.
  const below: RawBackend = {
    listObjects: (bucket, options) => services.storage.router.listObjects(bucket, options),
    headObject: (bucket, key) => services.storage.router.headObject(bucket, key),
    getObject: (bucket, key, range, check) =>
      services.storage.router.getObject(bucket, key, range, check),
  };
  const raw = () => below;
  const compressed = (bucket: string) =>
    services.config.current.storage.buckets[bucket]?.compression ?? true;
  const bucketNames = async () => (await services.storage.router.listBuckets()).map((b) => b.name);
  const decode = (rate: () => number): DeltaDecoder =>
  (
    base,
    delta,
    out,
    deltaBytes,
    signal,
    transform,
    written,
  ) => {
    if (!probe.available) {
      return delta.cancel().catch(() => {}).then(() => {
        throw new SvcError("ServiceUnavailable", `Deltas cannot be rebuilt: ${probe.reason}`);
      });
    }
    const codecMs = services.config.current.advanced.codec_timeout_secs * 1000;
    // The delta arrives at the paced rate: the codec may run as long as its read takes.
    const pacedMs = rate() > 0 ? (2 * deltaBytes * 1000) / rate() : 0;
    const timeoutMs = codecMs + pacedMs;
    // The codec that wrote the delta (zstd in the store's memory budget), not the scrub's own
    // xdelta3 only: deltas of both codecs are checked.
    const store = services.storage.delta.backend.codecs;
    const codecs = new CodecSet({ xdelta3: codec, zstd: store.zstd, budget: store.budget });
    const decoder = codecs.decoderFor(written?.codec, decodedSizeOf(written?.size ?? 0, transform));
    return services.storage.delta.pool.run(
      (s) =>
        withBaselineForm(
          scratchDir,
          base,
          written?.baselineForm,
          s,
          (base) =>
            transform === undefined
              ? decoder.decodeToFile(base, delta, out, { signal: s })
              : decodeTransformed(
                scratchDir,
                transform,
                out,
                (form) => decoder.decodeToFile(base, delta, form, { signal: s }),
                s,
              ).then(() => {}),
        ),
      { timeoutMs, signal, maxWaitMs: timeoutMs },
    );
  };
  const scrubber: Scrubber = new Scrubber({
    raw,
    decode: (): DeltaDecoder => decode(() => scrubber.state()?.bytes_per_sec ?? bytesPerSec),
    bucketNames,
    compressed,
    stateFile: `${stateDir}/.svc/scrub-state.json`,
    scratchDir,
    defaults: () => ({ bytesPerSec, maxFindings }),
    observer: {
      object: (result) => metrics.scrubObjects.inc({ result }),
      finding: (kind) => metrics.scrubFindings.inc({ kind }),
      running: (on) => metrics.scrubRunning.set(on ? 1 : 0),
      finished: (state) => {
        const failed = Object.values(state.per_bucket).reduce((n, p) => n + p.objects_failed, 0);
        audit("scrub_finished", {
          user: state.started_by ?? null,
          run_id: state.run_id,
          state: state.state,
          buckets: state.buckets.length,
          findings: state.findings_total,
          objects_failed: failed,
        }, state.findings_total > 0 || state.state === "failed" ? "warn" : undefined);
      },
    },
  });
  await scrubber.init();
  // Live streams end when svc is asked to stop: the server's graceful shutdown waits for every
  // open response, and an SSE response never ends by itself (an open Diagnostics page would hold
  // the process). The signal handlers of main.ts start that shutdown; these run beside them.
  const closing = new AbortController();
  const endStreams = () => closing.abort(new Error("svc is shutting down"));
  const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
  for (const signal of signals) Deno.addSignalListener(signal, endStreams);
  const reports = new EfficiencyReports(
    (bucket) =>
      scanBucketEfficiency(
        { listStored: (b, options) => raw().listObjects(b, options), compressed },
        bucket,
      ),
    (report) => {
      const ratio = report.logical_bytes > 0 ? 1 - report.stored_bytes / report.logical_bytes : 0;
      metrics.savingsRatio.set({ bucket: report.bucket }, ratio);
    },
  );
  return {
    scrubber,
    bucketNames,
    bytesPerSec: () => bytesPerSec,
    efficiency: (buckets: string[], fresh: boolean) => reports.get(buckets, fresh),
    verify: (request: Parameters<typeof verifyDeltas>[1]) =>
      verifyDeltas(
        {
          raw: raw(),
          decode: decode(() => request.bytesPerSec),
          scratchDir,
          compressed,
        },
        request,
      ),
    /** Fires when svc begins to stop: live streams end. */
    closing: closing.signal,
    /** Interrupts a running scan; it resumes at the next start. */
    close: async () => {
      for (const signal of signals) Deno.removeSignalListener(signal, endStreams);
      endStreams();
      await scrubber.close();
    },
  };
}

export type DiagnosticsPlane = Awaited<ReturnType<typeof openDiagnosticsPlane>>;
