/**
 * Canned permission templates for `GET /policies` (public: the console shows them before login
 * completes, and they hold no data). `{bucket}` is a placeholder the console (or the operator)
 * replaces with a bucket name before saving; `${iam:username}` stays and is expanded per user by
 * the index. Every template validates once `{bucket}` is replaced (policies_test.ts checks it).
 */
import type { Permission } from "./model.ts";

export interface PolicyTemplate {
  id: string;
  name: string;
  description: string;
  /** true when `{bucket}` must be replaced before use. */
  needs_bucket: boolean;
  permissions: Permission[];
}

export const BUCKET_PLACEHOLDER = "{bucket}";

export const POLICY_TEMPLATES: readonly PolicyTemplate[] = [
  {
    id: "admin",
    name: "Administrator",
    description: "Every action on every bucket, and the admin console (login-as).",
    needs_bucket: false,
    permissions: [{ effect: "Allow", actions: ["*"], resources: ["*"] }],
  },
  {
    id: "read-only-all",
    name: "Read-only, all buckets",
    description: "List and download every object in every bucket.",
    needs_bucket: false,
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["*"] }],
  },
  {
    id: "bucket-read-only",
    name: "Read-only on one bucket",
    description: "List and download objects of one bucket.",
    needs_bucket: true,
    permissions: [{ effect: "Allow", actions: ["read", "list"], resources: ["{bucket}"] }],
  },
  {
    id: "bucket-read-write",
    name: "Read-write on one bucket",
    description: "List, download, upload and delete objects of one bucket.",
    needs_bucket: true,
    permissions: [{
      effect: "Allow",
      actions: ["read", "list", "write", "delete"],
      resources: ["{bucket}"],
    }],
  },
  {
    id: "bucket-upload-only",
    name: "Upload-only on one bucket",
    description: "Upload objects to one bucket without seeing or removing what is there.",
    needs_bucket: true,
    permissions: [{ effect: "Allow", actions: ["write"], resources: ["{bucket}/*"] }],
  },
  {
    id: "home-directory",
    name: "Home directory",
    description:
      "Full access to `home/<user name>/` in one bucket; the rest of the bucket is invisible.",
    needs_bucket: true,
    permissions: [{
      effect: "Allow",
      actions: ["read", "list", "write", "delete"],
      resources: ["{bucket}/home/${iam:username}/*"],
    }],
  },
  {
    id: "deny-delete",
    name: "Deny deletes",
    description: "Refuse deletes everywhere; add beside an Allow (an explicit Deny wins).",
    needs_bucket: false,
    permissions: [{ effect: "Deny", actions: ["delete"], resources: ["*"] }],
  },
];

/** The template's permissions with `{bucket}` replaced. */
export function instantiate(template: PolicyTemplate, bucket: string): Permission[] {
  return template.permissions.map((p) => ({
    ...p,
    resources: p.resources.map((r) => r.replaceAll(BUCKET_PLACEHOLDER, bucket)),
  }));
}
