import assert from "node:assert/strict";
import {
  MMAP_THRESHOLD_BYTES,
  TRIM_THRESHOLD_BYTES,
  tuneMallocForStreaming,
} from "./malloc-tuning.ts";

/** glibc is what this machine (and the release builds) run on: elsewhere the call is a no-op. */
function isGlibc(): boolean {
  try {
    Deno.dlopen("libc.so.6", { gnu_get_libc_version: { parameters: [], result: "pointer" } })
      .close();
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "malloc tuning: glibc accepts both thresholds, once per process",
  ignore: Deno.build.os !== "linux" || !isGlibc(),
  fn: () => {
    // glibc refuses an mmap threshold above its maximum (32 MiB on 64-bit): mallopt returns 0.
    assert.ok(MMAP_THRESHOLD_BYTES <= 32 * 1024 * 1024);
    assert.ok(TRIM_THRESHOLD_BYTES > MMAP_THRESHOLD_BYTES);
    const applied = tuneMallocForStreaming();
    assert.equal(applied, "malloc mmap threshold 2 MiB, trim threshold 128 MiB, top pad 64 MiB");
    assert.equal(tuneMallocForStreaming(), applied, "idempotent");
  },
});
