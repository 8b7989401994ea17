/**
 * Brute-force limit on password checks (login, password change, recover-db), per client
 * address: `maxFailures` wrong passwords within `windowSecs` lock the address out for
 * `lockoutSecs`; while locked every attempt answers 429 `too_many_requests` with
 * `retry_after_secs` without checking the password. Defaults 5 / 60 s / 300 s: a person who
 * mistypes gets several tries, a guesser gets about one password a minute.
 *
 * An attempt being checked counts as a possible failure until it ends, so firing many at once
 * (bcrypt takes ~0.4 s each) cannot slip more than `maxFailures` guesses past the limit.
 * Failures only decay with time: a success forgets none of them. The limiter is shared by the
 * password routes and the key-pair routes (`/login-as`, `/session/browser-connect`), so when a
 * success cleared the address, four wrong passwords then one browse-connect with any valid key
 * pair (a read-only user's) repeated forever guessed the bootstrap password without limit.
 * Memory is bounded by `maxTracked` addresses.
 */
import { AdminError } from "../admin-error.ts";

export interface LoginLimiterOptions {
  maxFailures?: number;
  windowSecs?: number;
  lockoutSecs?: number;
  maxTracked?: number;
  now?: () => number;
}

export interface LoginAttempt {
  /** The password was right; the address's failures stay until they leave the window. */
  succeeded(): void;
  /** The password was wrong; true when this failure locked the address. */
  failed(): boolean;
  /** The attempt ended without a verdict (bad request, error): it does not count. */
  abandoned(): void;
}

interface Entry {
  failures: number[];
  pending: number;
  lockedUntil: number;
}

export class LoginLimiter {
  readonly maxFailures: number;
  readonly windowSecs: number;
  readonly lockoutSecs: number;
  readonly #maxTracked: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: LoginLimiterOptions = {}) {
    this.maxFailures = options.maxFailures ?? 5;
    this.windowSecs = options.windowSecs ?? 60;
    this.lockoutSecs = options.lockoutSecs ?? 300;
    this.#maxTracked = options.maxTracked ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  get tracked(): number {
    return this.#entries.size;
  }

  #tooMany(waitMs: number): AdminError {
    const secs = Math.max(1, Math.ceil(waitMs / 1000));
    return new AdminError(
      "too_many_requests",
      `Too many failed password attempts from this address; retry in ${secs} s`,
      { retry_after_secs: secs },
    );
  }

  /** Starts an attempt from `ip`, or throws 429 while the address is limited. */
  begin(ip: string): LoginAttempt {
    const now = this.#now();
    const entry = this.#entries.get(ip) ?? { failures: [], pending: 0, lockedUntil: 0 };
    entry.failures = entry.failures.filter((at) => now - at < this.windowSecs * 1000);
    if (entry.lockedUntil > now) throw this.#tooMany(entry.lockedUntil - now);
    if (entry.failures.length + entry.pending >= this.maxFailures) {
      const oldest = entry.failures[0] ?? now;
      throw this.#tooMany(oldest + this.windowSecs * 1000 - now);
    }
    entry.pending++;
    this.#touch(ip, entry);
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      entry.pending--;
      return true;
    };
    return {
      succeeded: () => {
        if (settle()) this.#forgetIfIdle(ip, entry);
      },
      failed: () => {
        if (!settle()) return false;
        const at = this.#now();
        entry.failures.push(at);
        if (entry.failures.length >= this.maxFailures) {
          entry.lockedUntil = at + this.lockoutSecs * 1000;
          entry.failures = [];
          return true;
        }
        return false;
      },
      abandoned: () => {
        if (settle()) this.#forgetIfIdle(ip, entry);
      },
    };
  }

  #touch(ip: string, entry: Entry): void {
    this.#entries.delete(ip);
    this.#entries.set(ip, entry);
    while (this.#entries.size > this.#maxTracked) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  #forgetIfIdle(ip: string, entry: Entry): void {
    if (entry.pending === 0 && entry.failures.length === 0 && entry.lockedUntil <= this.#now()) {
      this.#entries.delete(ip);
    }
  }
}
