/**
 * The UI's pages: each is a client-side route `/_/<name>` (and below). The server serves
 * index.html for exactly these (src/ui/ui-routes.ts imports this list), so no page can shadow an
 * operator route such as `/_/api`, `/_/health` or `/_/metrics`.
 */
export const PAGE_NAMES = [
  "login",
  "browse",
  "dashboard",
  "usage",
  "users",
  "ext-auth",
  "backends",
  "buckets",
  "admission",
  "config",
  "logs",
  "audit",
  "backup",
  "jobs",
  "events",
  "diagnostics",
] as const;

export type PageName = typeof PAGE_NAMES[number];
