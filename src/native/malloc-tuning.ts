/**
 * glibc malloc settings for a process that streams decrypted objects.
 *
 * Why: every decrypted batch leaves in a fresh ~1 MiB array (decrypt-stream.ts explains why it
 * cannot be pooled). V8 takes array memory from glibc's malloc, and with glibc's defaults these
 * arrays cost the kernel page faults instead of reusing warm memory, twice over:
 * - arrays of 128 KiB and more are mmap'ed and unmapped one by one (glibc raises that limit on
 *   its own once such a block is freed, but not past a trim setting made by anyone, and not
 *   reliably before a download is over);
 * - the garbage collector frees tens of MiB of arrays at once, and glibc gives the top of the
 *   heap back to the kernel as soon as more than `M_TRIM_THRESHOLD` (128 KiB by default, 2× the
 *   mmap limit once raised) is free there, so the next batches fault the same pages in again.
 * Measured on a 512 MiB encrypted GET: 28,000-55,000 page faults per GiB and ~2-4 CPU-s/GiB
 * with the defaults, ~100-1,000 faults and ~1 CPU-s/GiB with these settings (docs/BENCHMARKS.md).
 *
 * The cost: up to TRIM_THRESHOLD_BYTES of freed memory stays with the process instead of going
 * back to the kernel after a burst (peak RSS is unchanged: the garbage existed either way).
 * Process-wide, so it is set once, at the first encrypted read or write (gcm-engine.ts); not
 * applied where libc is not glibc or FFI is not allowed.
 */
import { type Libc, processLibc } from "./libc.ts";

/** mallopt parameters (glibc's malloc.h). */
const M_TRIM_THRESHOLD = -1;
const M_TOP_PAD = -2;
const M_MMAP_THRESHOLD = -3;

/** Blocks under this come from the heap: a decrypted batch (960 KiB) with room to spare. */
export const MMAP_THRESHOLD_BYTES = 2 * 1024 * 1024;
/** Free memory kept at the top of the heap: more than one garbage collection frees at once. */
export const TRIM_THRESHOLD_BYTES = 128 * 1024 * 1024;
/**
 * What a trim leaves (and how far the heap grows ahead, untouched, so costing no memory): when a
 * late collection frees more than the trim threshold at once, half of it stays warm.
 */
export const TOP_PAD_BYTES = 64 * 1024 * 1024;

let applied: string | null | undefined;

/**
 * Sets the thresholds once per process. Returns what was set (for the log), or null when it was
 * not possible (not Linux/glibc, FFI not allowed, or glibc refused a value).
 */
export function tuneMallocForStreaming(): string | null {
  if (applied === undefined) applied = tuneMalloc(processLibc);
  return applied;
}

/** Sets the thresholds through `libc`: what was set, or null (tuneMallocForStreaming's cases). */
export function tuneMalloc(libc: Libc): string | null {
  if (Deno.build.os !== "linux" || !libc.available) return null;
  const { mallopt, gnu_get_libc_version } = libc.symbols;
  // gnu_get_libc_version exists only in glibc: elsewhere mallopt's parameters may mean other
  // things, so nothing is set.
  if (mallopt === null || gnu_get_libc_version === null) return null;
  const ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) === 1 &&
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) === 1 &&
    mallopt(M_TOP_PAD, TOP_PAD_BYTES) === 1;
  if (!ok) return null;
  return `malloc mmap threshold ${MMAP_THRESHOLD_BYTES >> 20} MiB, trim threshold ${
    TRIM_THRESHOLD_BYTES >> 20
  } MiB, top pad ${TOP_PAD_BYTES >> 20} MiB`;
}
