/**
 * Declarative IAM at startup: with `access.iam_mode: declarative` the config file is
 * authoritative, so the database is reconciled to it before S3 serves (an edit made while svc
 * was stopped takes effect like a SIGHUP would). A reconcile refusal stops startup with the
 * config error (nothing changed). The empty-YAML gate does not apply here: it guards a flip from
 * gui made by an apply, and at startup there is no running mode to flip from.
 */
import type { Config } from "../../config/mod.ts";
import { summaryLine } from "../../iam/mod.ts";
import { getLogger } from "../../observability/mod.ts";
import { asConfigError, auditPlan, type IamAudit, type IamReconcilePort } from "../config-iam.ts";

const log = getLogger("svc::iam");

export async function reconcileAtBoot(
  port: IamReconcilePort,
  access: Config["access"],
  audit: IamAudit,
): Promise<void> {
  if (access.iam_mode !== "declarative") return;
  try {
    const plan = await port.reconcile(
      access as unknown as Record<string, unknown>,
      access.access_key_id,
    );
    auditPlan(plan, audit, { source: "startup", user: null, ip: null });
    const line = summaryLine(plan);
    if (line !== null) log.warn(line);
  } catch (err) {
    throw asConfigError(err);
  }
}
