/**
 * The leader lease of a rule: whoever holds it runs the rule; nobody else does until it expires
 * or is released. A holder renews it every heartbeat; a renewal that fails means the lease was
 * lost (it expired and someone else took it), and the run must stop. Two stores: the config
 * database (node-local: several runners in one process or on one database) and an S3
 * conditional-write lease object (s3-lease.ts: several svc instances sharing a bucket).
 */
import type { LeaseHolder, RuleStore } from "./rule-store.ts";

export interface Lease {
  id: string;
  token: string;
}

export interface AcquireOptions {
  /**
   * Null as well when the last run anywhere released the lease less than this long ago (a
   * scheduled run: another instance of the fleet just ran the rule). Node-local leases ignore it.
   */
  notRunWithinMs?: number;
}

/** How the run that releases a lease ended (shown fleet-wide; node-local leases ignore it). */
export interface RunEnd {
  status: string;
  trigger: string;
}

export interface Leases {
  /**
   * Null when another holder has it. A lease this instance still holds (its release failed: a
   * full disk, an unreachable store) is taken over at once, with a new token: the caller runs
   * at most one run per id at a time (RuleJobs), so such a lease belongs to no live run.
   */
  acquire(id: string, ttlMs: number, options?: AcquireOptions): Promise<Lease | null>;
  /** False when the lease was lost. Errors (store unreachable) throw. */
  renew(lease: Lease, ttlMs: number): Promise<boolean>;
  release(lease: Lease, ended?: RunEnd): Promise<void>;
  /** The current unexpired holder, or null. */
  holder(id: string): Promise<LeaseHolder | null>;
}

/** Leases in the config database, held under this process's instance id. */
export class DbLeases implements Leases {
  constructor(private readonly store: RuleStore, private readonly instance: string) {}

  async acquire(id: string, ttlMs: number): Promise<Lease | null> {
    const token = await this.store.acquireLease(id, this.instance, ttlMs);
    return token === null ? null : { id, token };
  }

  renew(lease: Lease, ttlMs: number): Promise<boolean> {
    return this.store.renewLease(lease.id, lease.token, ttlMs);
  }

  release(lease: Lease): Promise<void> {
    return this.store.releaseLease(lease.id, lease.token);
  }

  holder(id: string): Promise<LeaseHolder | null> {
    return this.store.lease(id);
  }
}
