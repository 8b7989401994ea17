/** What the admin plane's route builders share: the planes built before them, whole. */
import type { AuditFn } from "../../observability/mod.ts";
import type { AdminPrincipal, AdminSessions } from "../../admin/mod.ts";
import type { ExtAuthStore } from "../../db/mod.ts";
import type { EventOutbox } from "../../events/mod.ts";
import type { JobsService } from "../../jobs/mod.ts";
import type { S3Handler } from "../../s3/mod.ts";
import type { ConfigRuntime } from "../config-runtime.ts";
import type { Services } from "../services.ts";
import type { ConfigState } from "./config-state.ts";
import type { IamPlane } from "./iam-plane.ts";
import type { UsagePlane } from "./usage-plane.ts";
import type { DiagnosticsPlane } from "./diagnostics-plane.ts";

export interface AdminPlaneDeps {
  services: Services;
  runtime: ConfigRuntime;
  state: ConfigState;
  iam: IamPlane;
  audit: AuditFn;
  sessions: AdminSessions;
  /** Whether a session's principal is still entitled to the admin plane (IAM may have changed). */
  stillEntitled: (principal: AdminPrincipal, clientIp: string) => boolean;
  extAuth: ExtAuthStore;
  events: EventOutbox;
  usage: UsagePlane;
  diagnostics: DiagnosticsPlane;
  jobs: JobsService;
  trustProxyHeaders: () => boolean;
  /** The S3 handler (the console's object browser goes through it, as the session's user). */
  s3: S3Handler;
}
