/**
 * The delta store's settings as the unit tests use them: defaults most tests share, and the
 * fields a test is about given as overrides.
 */
import type { DeltaSettings } from "../delta/mod.ts";

export function deltaTestSettings(overrides: Partial<DeltaSettings> = {}): DeltaSettings {
  return {
    maxDeltaRatio: 0.5,
    maxObjectSize: 1 << 30,
    codecTimeoutMs: 60_000,
    codecSlotWaitMs: 5_000,
    bucketCompression: () => true,
    bucketMaxDeltaRatio: () => undefined,
    ...overrides,
  };
}
