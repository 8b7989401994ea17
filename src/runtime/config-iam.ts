/**
 * The declarative-IAM step of the one config apply path (ConfigRuntime.apply; SPEC "IAM mode
 * transitions" and "Declarative IAM" 1-6). When the new config has `access.iam_mode:
 * declarative`, the YAML IAM is checked against the database before anything is persisted (an
 * error refuses the whole apply, nothing changed), a dry run answers the preview line, and a live
 * apply reconciles in one transaction just before the new config is swapped in, audits every
 * change (`iam_reconcile_*`, tagged declarative) and answers the summary line.
 *
 * The reconciler is a port the IAM plane builds over the config database (admin-plane/iam-plane.ts)
 * and hands to the runtime at construction (`ConfigRuntimeOptions.iamReconciler`).
 */
import { type Config, ConfigError } from "../config/mod.ts";
import {
  hasNoUsersOrGroups,
  IamError,
  previewLine,
  type ReconcilePlan,
  summaryLine,
} from "../iam/mod.ts";
import type { LogLevel } from "../observability/mod.ts";

/** What the runtime needs of declarative IAM (src/db/iam-reconciler.ts implements it). */
export interface IamReconcilePort {
  /** Throws IamError; writes nothing. No user may hold `bootstrapKeyId` (iam/model.ts). */
  preview(access: Record<string, unknown>, bootstrapKeyId?: string): Promise<ReconcilePlan>;
  /** One transaction; the IAM index is rebuilt before it returns. */
  reconcile(access: Record<string, unknown>, bootstrapKeyId?: string): Promise<ReconcilePlan>;
}

export type IamAudit = (event: string, fields: Record<string, unknown>, level?: LogLevel) => void;

export interface IamStepInput {
  running: Config["access"];
  next: Config["access"];
  /** The IAM to reconcile when it is not `next` (a declarative-iam-apply fragment with extras). */
  iamAccess?: Record<string, unknown>;
  dryRun: boolean;
}

export interface IamStep {
  warnings: string[];
  /** Runs the reconcile (live applies in declarative mode); answers its warnings. */
  commit: ((audit: IamAudit, who: Record<string, unknown>) => Promise<string[]>) | null;
}

export const EMPTY_FLIP_MESSAGE =
  "access.iam_mode: switching from gui to declarative with empty iam_users and iam_groups " +
  "would delete every IAM user and group; add the users and groups to access first " +
  "(GET /_/api/admin/config/declarative-iam-export gives the current ones) or keep iam_mode: gui";

/** Turns a reconcile refusal into the config error the apply path reports (422). */
export function asConfigError(err: unknown): unknown {
  return err instanceof IamError ? new ConfigError(`Declarative IAM: ${err.message}`) : err;
}

/** Validates and previews; throws ConfigError when the apply must be refused. */
export async function prepareIamStep(
  port: IamReconcilePort | null,
  input: IamStepInput,
): Promise<IamStep> {
  if (input.next.iam_mode !== "declarative") return { warnings: [], commit: null };
  const access = input.iamAccess ?? input.next as unknown as Record<string, unknown>;
  if (input.running.iam_mode !== "declarative" && hasNoUsersOrGroups(access)) {
    if (!input.dryRun) throw new ConfigError(EMPTY_FLIP_MESSAGE);
    return {
      warnings: [`declarative IAM preview: a live apply would be refused: ${EMPTY_FLIP_MESSAGE}`],
      commit: null,
    };
  }
  if (port === null) {
    return {
      warnings: ["declarative IAM is not reconciled: the config database is not open"],
      commit: null,
    };
  }
  let plan: ReconcilePlan;
  try {
    plan = await port.preview(access, input.next.access_key_id);
  } catch (err) {
    throw asConfigError(err);
  }
  if (input.dryRun) return { warnings: [previewLine(plan)], commit: null };
  return {
    warnings: [],
    commit: async (audit, who) => {
      let done: ReconcilePlan;
      try {
        done = await port.reconcile(access, input.next.access_key_id);
      } catch (err) {
        throw asConfigError(err);
      }
      auditPlan(done, audit, who);
      const line = summaryLine(done);
      return line === null ? [] : [line];
    },
  };
}

/** One `iam_reconcile_*` entry per changed record (never a secret); nothing for a no-op. */
export function auditPlan(plan: ReconcilePlan, audit: IamAudit, who: Record<string, unknown>) {
  const fields = (name: string) => ({ ...who, name, tag: "declarative" });
  const entities = [
    ["user", plan.users],
    ["group", plan.groups],
    ["provider", plan.providers],
  ] as const;
  for (const [kind, entity] of entities) {
    for (const item of entity.create) {
      audit(`iam_reconcile_${kind}_create`, fields(item.name), "info");
    }
    for (const item of entity.update) {
      audit(`iam_reconcile_${kind}_update`, fields(item.next.name), "info");
    }
    for (const item of entity.delete) {
      audit(`iam_reconcile_${kind}_delete`, fields(item.name), "info");
    }
  }
  if (plan.rules !== null) {
    audit("iam_reconcile_mapping_rules_replaced", {
      ...who,
      count: plan.rules.length,
      tag: "declarative",
    }, "info");
  }
}

/** SPEC "IAM mode transitions": a mode change is audited at WARN. */
export function auditModeChange(
  running: Config["access"],
  next: Config["access"],
  audit: IamAudit,
  who: Record<string, unknown>,
): void {
  if (running.iam_mode === next.iam_mode) return;
  audit("iam_mode_changed", { ...who, from: running.iam_mode, to: next.iam_mode }, "warn");
}
