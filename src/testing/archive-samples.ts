/** Sample contents for the archive token form tests (src/delta/archive). */

/** Deterministic compressible text (words from a seeded generator) with some random bytes. */
export function sample(seed: number, size: number): Uint8Array {
  const words = ["alpha", "beta", "gamma", "delta", "archive", "svc", "token", "{\n", "}\n", " "];
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  const out = new Uint8Array(size);
  let at = 0;
  while (at < size) {
    if (next() % 50 === 0) {
      for (let i = 0; i < 300 && at < size; i++) out[at++] = next() >>> 24;
      continue;
    }
    for (const c of new TextEncoder().encode(words[next() % words.length])) {
      if (at < size) out[at++] = c;
    }
  }
  return out;
}
