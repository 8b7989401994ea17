/** The console's pages after Objects, in navigation order; `admin` pages need an admin session. */
import type { ComponentType } from "preact";
import type { PageName } from "../page-names.ts";
import { DashboardPage } from "./dashboard.ts";
import { UsersPage } from "./users.ts";
import { BackendsPage } from "./backends.ts";
import { BucketsPage } from "./buckets.ts";
import { AdmissionPage } from "./admission.ts";
import { ConfigPage } from "./config.ts";
import { LogsPage } from "./logs.ts";
import { AuditPage } from "./audit.ts";
import { BackupPage } from "./backup.ts";
import { JobsPage } from "./jobs.ts";
import { EventsPage } from "./events.ts";
import { ExtAuthPage } from "./ext-auth.ts";
import { DiagnosticsPage } from "./diagnostics.ts";
import { UsagePage } from "./usage.ts";

export interface PageEntry {
  name: PageName;
  title: string;
  admin: boolean;
  // deno-lint-ignore no-explicit-any
  component: ComponentType<any>;
}

export const PAGES: PageEntry[] = [
  { name: "dashboard", title: "Dashboard", admin: true, component: DashboardPage },
  { name: "usage", title: "Usage", admin: true, component: UsagePage },
  { name: "users", title: "Users & groups", admin: true, component: UsersPage },
  { name: "ext-auth", title: "External login", admin: true, component: ExtAuthPage },
  { name: "backends", title: "Backends", admin: true, component: BackendsPage },
  { name: "buckets", title: "Buckets & policies", admin: true, component: BucketsPage },
  { name: "admission", title: "Admission", admin: true, component: AdmissionPage },
  { name: "config", title: "Config", admin: true, component: ConfigPage },
  { name: "logs", title: "Logs", admin: true, component: LogsPage },
  { name: "audit", title: "Audit", admin: true, component: AuditPage },
  { name: "backup", title: "Backup", admin: true, component: BackupPage },
  { name: "jobs", title: "Jobs", admin: true, component: JobsPage },
  { name: "events", title: "Event outbox", admin: true, component: EventsPage },
  { name: "diagnostics", title: "Diagnostics", admin: true, component: DiagnosticsPage },
];
