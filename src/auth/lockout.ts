/**
 * Per-IP brute-force lockout: `maxAttempts` authentication failures within `windowSeconds` lock
 * the address out for `lockoutSeconds`. Memory is bounded by `maxTracked` addresses; the least
 * recently failing ones are forgotten first.
 */
export interface LockoutSettings {
  maxAttempts: number;
  windowSeconds: number;
  lockoutSeconds: number;
}

interface Entry {
  windowStart: number;
  failures: number;
  lockedUntil: number;
}

export class Lockout {
  readonly #entries = new Map<string, Entry>();
  readonly #maxTracked: number;

  constructor(maxTracked = 50_000) {
    this.#maxTracked = maxTracked;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Milliseconds left of the address's lockout, 0 when it may try. */
  lockedFor(ip: string, now: number): number {
    const entry = this.#entries.get(ip);
    return entry && entry.lockedUntil > now ? entry.lockedUntil - now : 0;
  }

  /** Counts one failure; returns true when this failure locks the address. */
  recordFailure(ip: string, now: number, settings: LockoutSettings): boolean {
    let entry = this.#entries.get(ip);
    if (!entry || now - entry.windowStart > settings.windowSeconds * 1000) {
      entry = { windowStart: now, failures: 0, lockedUntil: entry?.lockedUntil ?? 0 };
    }
    entry.failures++;
    // Re-insert so the map's order is least-recently-failing first.
    this.#entries.delete(ip);
    this.#entries.set(ip, entry);
    while (this.#entries.size > this.#maxTracked) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    if (entry.failures >= settings.maxAttempts && entry.lockedUntil <= now) {
      entry.lockedUntil = now + settings.lockoutSeconds * 1000;
      entry.failures = 0;
      entry.windowStart = now;
      return true;
    }
    return false;
  }
}
