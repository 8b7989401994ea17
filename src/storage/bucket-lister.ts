/**
 * ListBuckets across named backends: every backend is asked concurrently, each bounded by
 * `backend_list_timeout_secs`, and the real names it returns are mapped back to the virtual
 * names clients use (bucket policies with `alias`). A backend that fails or times out is not
 * asked again for `backend_list_cooldown_secs`; meanwhile its buckets appear as placeholders
 * (its last good listing plus the buckets routed to it by policy), so one slow backend neither
 * stalls nor empties the listing. A merged result is reused for `backend_list_fresh_secs`
 * (0 disables); creating or deleting a bucket through svc invalidates it.
 */

import { getLogger } from "../observability/mod.ts";
import { withTimeout } from "../lib/mod.ts";
import type { Backend, BucketEntry } from "./backend.ts";

const log = getLogger("svc::storage");

export interface BucketListingSettings {
  listTimeoutMs: number;
  listCooldownMs: number;
  listFreshMs: number;
  /** `storage.buckets`: virtual name -> route. */
  policies: Record<string, { backend?: string; alias?: string }>;
}

interface Listed {
  name: string;
  backend: Backend;
}

interface BackendState {
  lastGood?: BucketEntry[];
  failedAt?: number;
}

/** Placeholder creation date for a bucket whose backend could not be listed. */
const UNKNOWN_DATE = new Date(0);

export class BucketLister {
  readonly #backends: Listed[];
  readonly #settings: () => BucketListingSettings;
  readonly #now: () => number;
  readonly #state = new Map<string, BackendState>();
  #fresh: { at: number; entries: BucketEntry[] } | undefined;

  constructor(
    backends: Listed[],
    defaultName: string,
    settings: () => BucketListingSettings,
    now: () => number = Date.now,
  ) {
    // The default backend first: it wins when two backends hold the same name.
    this.#backends = [
      ...backends.filter((b) => b.name === defaultName),
      ...backends.filter((b) => b.name !== defaultName),
    ];
    this.#settings = settings;
    this.#now = now;
  }

  invalidate(): void {
    this.#fresh = undefined;
  }

  async list(): Promise<BucketEntry[]> {
    const settings = this.#settings();
    const now = this.#now();
    if (this.#fresh && settings.listFreshMs > 0 && now - this.#fresh.at < settings.listFreshMs) {
      return this.#fresh.entries.map((entry) => ({ ...entry }));
    }
    const listings = await Promise.all(
      this.#backends.map((listed) => this.#listOne(listed, settings, now)),
    );
    const byName = new Map<string, BucketEntry>();
    this.#backends.forEach((listed, index) => {
      for (const entry of this.#virtualEntries(listed.name, listings[index], settings)) {
        if (!byName.has(entry.name)) byName.set(entry.name, entry);
      }
    });
    const entries = [...byName.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0
    );
    this.#fresh = { at: now, entries };
    return entries.map((entry) => ({ ...entry }));
  }

  /** One backend's real buckets: a fresh listing, or its placeholder while it is failing. */
  async #listOne(
    listed: Listed,
    settings: BucketListingSettings,
    now: number,
  ): Promise<BucketEntry[]> {
    const state = this.#state.get(listed.name) ?? {};
    this.#state.set(listed.name, state);
    if (state.failedAt !== undefined && now - state.failedAt < settings.listCooldownMs) {
      return this.#placeholder(listed.name, state, settings);
    }
    try {
      const entries = await withTimeout(listed.backend.listBuckets(), settings.listTimeoutMs);
      state.lastGood = entries;
      state.failedAt = undefined;
      return entries;
    } catch (err) {
      state.failedAt = now;
      log.warn(`Listing the buckets of backend "${listed.name}" failed; showing placeholders`, {
        error: err instanceof Error ? err.message : String(err),
        cooldown_secs: settings.listCooldownMs / 1000,
      });
      return this.#placeholder(listed.name, state, settings);
    }
  }

  #placeholder(name: string, state: BackendState, settings: BucketListingSettings): BucketEntry[] {
    const entries = [...(state.lastGood ?? [])];
    const known = new Set(entries.map((entry) => entry.name));
    for (const [virtual, policy] of Object.entries(settings.policies)) {
      const real = policy.alias ?? virtual;
      if (policy.backend === name && !known.has(real)) {
        entries.push({ name: real, created: UNKNOWN_DATE });
        known.add(real);
      }
    }
    return entries;
  }

  /** Real names of one backend as the names clients use. */
  #virtualEntries(
    backendName: string,
    entries: BucketEntry[],
    settings: BucketListingSettings,
  ): BucketEntry[] {
    const out: BucketEntry[] = [];
    const policies = Object.entries(settings.policies);
    const servesHere = (policy: { backend?: string }) =>
      policy.backend === undefined || policy.backend === backendName;
    for (const entry of entries) {
      const claimed = policies.filter(([virtual, policy]) =>
        (policy.alias ?? virtual) === entry.name && servesHere(policy)
      );
      for (const [virtual] of claimed) out.push({ name: virtual, created: entry.created });
      if (claimed.length > 0) continue;
      // Unclaimed: shown under its own name unless that name routes somewhere else.
      const own = settings.policies[entry.name];
      if (own && !(servesHere(own) && (own.alias ?? entry.name) === entry.name)) continue;
      out.push({ name: entry.name, created: entry.created });
    }
    return out;
  }
}
