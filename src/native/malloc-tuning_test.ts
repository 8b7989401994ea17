import assert from "node:assert/strict";
import {
  MMAP_THRESHOLD_BYTES,
  TRIM_THRESHOLD_BYTES,
  tuneMalloc,
  tuneMallocForStreaming,
} from "./malloc-tuning.ts";
import { loadLibc, processLibc } from "./libc.ts";

/** glibc is what this machine (and the release builds) run on: elsewhere the call is a no-op. */
const isGlibc = processLibc.available && processLibc.symbols.gnu_get_libc_version !== null;

Deno.test({
  name: "malloc tuning: glibc accepts both thresholds, once per process",
  ignore: Deno.build.os !== "linux" || !isGlibc,
  fn: () => {
    // glibc refuses an mmap threshold above its maximum (32 MiB on 64-bit): mallopt returns 0.
    assert.ok(MMAP_THRESHOLD_BYTES <= 32 * 1024 * 1024);
    assert.ok(TRIM_THRESHOLD_BYTES > MMAP_THRESHOLD_BYTES);
    const applied = tuneMallocForStreaming();
    assert.equal(applied, "malloc mmap threshold 2 MiB, trim threshold 128 MiB, top pad 64 MiB");
    assert.equal(tuneMallocForStreaming(), applied, "idempotent");
  },
});

Deno.test({
  name: "malloc tuning: nothing is set without libc, or without glibc's own functions",
  ignore: !processLibc.available,
  fn: () => {
    assert.equal(tuneMalloc(loadLibc(["libc-svc-missing.so.6"])), null);
    assert.ok(processLibc.available);
    const notGlibc = {
      ...processLibc,
      symbols: { ...processLibc.symbols, gnu_get_libc_version: null },
    };
    assert.equal(tuneMalloc(notGlibc), null);
    const noMallopt = { ...processLibc, symbols: { ...processLibc.symbols, mallopt: null } };
    assert.equal(tuneMalloc(noMallopt), null);
  },
});
