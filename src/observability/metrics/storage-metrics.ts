/** Multipart uploads in flight, the multipart sweeper, and encrypted objects that fail to read. */
import {
  type CounterHandle,
  DURATION_BUCKETS,
  type GaugeHandle,
  type LabelledCounterHandle,
  type LabelledHistogramHandle,
  type MetricRegistry,
} from "./metric-registry.ts";

export interface MultipartMetrics {
  inflight: GaugeHandle;
  inflightBytes: GaugeHandle;
}

/** `phase` and `state` must come from small fixed sets of constants of the sweeper. */
export interface SweepMetrics {
  runs: LabelledCounterHandle<{ phase: string }>;
  duration: LabelledHistogramHandle<{ phase: string }>;
  sweptUploads: LabelledCounterHandle<{ state: string }>;
  reclaimedBytes: CounterHandle;
  orphanRelayDirs: CounterHandle;
  orphanRelayFiles: CounterHandle;
  lastUploadsReclaimed: GaugeHandle;
  lastReclaimedBytes: GaugeHandle;
}

/** `reason`: one of DecryptFailure (storage/encryption/encryption-error.ts), a fixed set. */
export interface EncryptionMetrics {
  decryptFailures: LabelledCounterHandle<{ reason: string }>;
}

export function multipartMetrics(
  { counter, gauge, histogram }: MetricRegistry,
): { multipart: MultipartMetrics; sweep: SweepMetrics } {
  const multipart = {
    inflight: gauge("svc_multipart_uploads_inflight", "Uploads in progress."),
    inflightBytes: gauge(
      "svc_multipart_inflight_bytes",
      "Bytes uploads in progress hold (stored and arriving parts; max_total_multipart_bytes).",
    ),
  };
  const sweep = {
    runs: counter("svc_multipart_sweep_runs_total", "Sweeper runs.", ["phase"]),
    duration: histogram("svc_multipart_sweep_duration_seconds", "Sweep time.", DURATION_BUCKETS, [
      "phase",
    ]),
    sweptUploads: counter("svc_multipart_swept_uploads_total", "Uploads swept.", ["state"]),
    reclaimedBytes: counter("svc_multipart_sweep_reclaimed_bytes_total", "Bytes reclaimed."),
    orphanRelayDirs: counter("svc_multipart_sweep_orphan_relay_dirs_total", "Orphan relay dirs."),
    orphanRelayFiles: counter("svc_multipart_sweep_orphan_relay_files_total", "Orphan files."),
    lastUploadsReclaimed: gauge("svc_multipart_sweep_last_uploads_reclaimed", "Uploads, last run."),
    lastReclaimedBytes: gauge("svc_multipart_sweep_last_reclaimed_bytes", "Bytes, last run."),
  };
  return { multipart, sweep };
}

export function encryptionMetrics({ counter }: MetricRegistry): EncryptionMetrics {
  return {
    decryptFailures: counter(
      "svc_encryption_decrypt_failures_total",
      "Encrypted objects that could not be read (auth, truncated, header, key-mismatch).",
      ["reason"],
    ),
  };
}
