/**
 * Whether an S3 backend seems frozen: it takes connections (or has them pooled) and answers
 * nothing. Without this, every request to such a backend waits the full connect + read timeout
 * for its headers (70 s by default), and an idempotent one that again for each retry, while
 * clients pile up behind it.
 *
 * The backend is suspected when an attempt has waited longer than `silenceMs` (the connect
 * timeout) for its response headers, or timed out, with nothing answered by the backend since
 * that attempt began. While suspected, a new attempt is a probe: it waits `silenceMs` for its
 * headers instead of connect + read, and a timeout is not retried, so requests answer 503 SlowDown
 * within about the connect timeout. Any response (of any status) clears the suspicion. An attempt
 * already waiting keeps its own deadline: a long operation of a live backend is not cut short.
 */

/** One attempt's wait for its response headers. */
export interface HeadersWait {
  readonly start: number;
}

export class BackendLiveness {
  /** When the backend last answered anything (performance.now()). */
  #lastAnswer = -Infinity;
  /** Start of the latest attempt that timed out unanswered. */
  #lastUnanswered = -Infinity;
  readonly #waiting = new Set<HeadersWait>();

  constructor(readonly silenceMs: number) {}

  /** Whether the backend has been silent too long (see the header). */
  suspected(): boolean {
    if (this.#lastUnanswered > this.#lastAnswer) return true;
    const now = performance.now();
    for (const wait of this.#waiting) {
      if (wait.start > this.#lastAnswer && now - wait.start > this.silenceMs) return true;
    }
    return false;
  }

  /** The headers deadline of an attempt starting now: a probe's while suspected. */
  headersDeadline(normalMs: number): { ms: number; probe: boolean } {
    const probe = this.suspected();
    return { ms: probe ? Math.min(this.silenceMs, normalMs) : normalMs, probe };
  }

  /** An attempt starts waiting for its response headers. */
  begin(): HeadersWait {
    const wait = { start: performance.now() };
    this.#waiting.add(wait);
    return wait;
  }

  /** The wait ended: headers came, it timed out, or it failed otherwise (refused, aborted). */
  end(wait: HeadersWait, outcome: "answered" | "timeout" | "failed"): void {
    if (!this.#waiting.delete(wait)) return;
    if (outcome === "answered") this.#lastAnswer = performance.now();
    else if (outcome === "timeout") {
      this.#lastUnanswered = Math.max(this.#lastUnanswered, wait.start);
    }
  }
}
