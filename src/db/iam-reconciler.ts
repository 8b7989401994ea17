/**
 * Declarative IAM over the config database: `preview` (a dry run: read-only transaction, zero
 * writes), `reconcile` (checks, then ONE write transaction that re-reads the state, plans and
 * writes; the IAM version moves once, and only when something changed; the index is rebuilt
 * before it returns) and `state` (for the export). Every YAML check runs before the transaction
 * opens (src/iam/declarative.ts); the one that needs the database (a key of a to-be-deleted user)
 * runs inside it before the first write, so any error leaves the database as it was.
 */
import {
  desiredIam,
  type IamState,
  isNoop,
  planReconcile,
  type ReconcilePlan,
} from "../iam/mod.ts";
import type { DbClient } from "./config-db.ts";
import { readIamState, writePlan } from "./iam-declarative-rows.ts";

export interface IamReconcilerOptions {
  /** Rebuilds the IAM index after a reconcile that changed something; awaited. */
  onChange: () => Promise<unknown>;
  now?: () => number;
}

export class IamReconciler {
  readonly #db: DbClient;
  readonly #onChange: () => Promise<unknown>;
  readonly #now: () => number;

  constructor(db: DbClient, options: IamReconcilerOptions) {
    this.#db = db;
    this.#onChange = options.onChange;
    this.#now = options.now ?? Date.now;
  }

  /**
   * What a reconcile of `access` would do; throws IamError; writes nothing. `bootstrapKeyId` (the
   * running `access.access_key_id`) is a key no user may hold (iam/model.ts).
   */
  async preview(access: Record<string, unknown>, bootstrapKeyId?: string): Promise<ReconcilePlan> {
    const desired = desiredIam(access, bootstrapKeyId);
    const state = await this.state();
    return planReconcile(desired, state);
  }

  /** Converges the database to `access` in one transaction; answers the plan it wrote. */
  async reconcile(
    access: Record<string, unknown>,
    bootstrapKeyId?: string,
  ): Promise<ReconcilePlan> {
    const desired = desiredIam(access, bootstrapKeyId);
    const plan = await this.#db.transaction(async (tx) => {
      const planned = planReconcile(desired, await readIamState(tx));
      if (!isNoop(planned)) await writePlan(tx, planned, this.#now());
      return planned;
    });
    if (!isNoop(plan)) await this.#onChange();
    return plan;
  }

  /** The database's IAM, secrets included (redact before showing). */
  state(): Promise<IamState> {
    return this.#db.transaction((tx) => readIamState(tx), "read");
  }
}
