/**
 * A real run holds its rule's leader lease for as long as it runs: this renews it every heartbeat
 * and aborts the run, with a RunAborted saying why, once the lease is lost. RunAborted is also
 * the reason of a run killed by an operator or stopped by shutdown (rule-jobs.ts).
 */
import { getLogger } from "../../observability/mod.ts";
import type { Clock } from "../clock.ts";
import type { Lease, Leases } from "./leases.ts";
import type { KindSettings } from "./rule-model.ts";
import { messageOf } from "./run-recorder.ts";

const log = getLogger("svc::jobs");

/** Why a run was aborted. */
export class RunAborted extends Error {
  constructor(readonly why: "kill" | "shutdown" | "lease-lost", detail?: string) {
    super(
      why === "kill"
        ? `The run was killed${detail ? ` by ${detail}` : ""}`
        : why === "shutdown"
        ? "svc shut down during the run"
        : `The rule's lease was lost${detail ? `: ${detail}` : ""}; the run stopped`,
    );
    this.name = "RunAborted";
  }
}

/**
 * Renews the lease every heartbeat; a lost lease (or an unreachable store) aborts the run. The
 * caller clears the returned interval when the run ends.
 */
export function renewWhileRunning(
  lease: Lease,
  settings: KindSettings,
  abort: AbortController,
  leases: () => Leases,
  clock: Clock,
): ReturnType<typeof setInterval> {
  let busy = false;
  // Until when the lease is surely ours: a renewal that cannot reach the store is retried at
  // the next heartbeat while this lies ahead, and only then counts as lost.
  let heldUntil = clock.now() + settings.leaseTtlMs;
  return setInterval(() => {
    if (busy || abort.signal.aborted) return;
    busy = true;
    const asked = clock.now();
    leases().renew(lease, settings.leaseTtlMs)
      .then((held) => {
        if (held) heldUntil = asked + settings.leaseTtlMs;
        else abort.abort(new RunAborted("lease-lost", "another runner holds it now"));
      })
      .catch((err) => {
        if (clock.now() + settings.heartbeatMs >= heldUntil) {
          abort.abort(new RunAborted("lease-lost", messageOf(err)));
        } else {
          log.warn("lease renewal failed; retried at the next heartbeat", {
            job: lease.id,
            error: messageOf(err),
          });
        }
      })
      .finally(() => busy = false);
  }, settings.heartbeatMs);
}
