/**
 * Rules that span several fields of a structurally valid config: unique names, references
 * between records, exclusive fields, conditional requirements. Errors are `[path, message]`
 * pairs; a few findings (an invalid `default_backend`) are repaired with a warning instead.
 * The functions may normalise the config in place (public shorthand, cleared references).
 */
import { normalizeBcryptHash } from "../bcrypt-hash.ts";
import type { Config } from "./config-schema.ts";
import { BUCKET_NAME, type EncryptionConfig } from "./schema-storage.ts";
import { parseDuration } from "./schema-common.ts";
import { backendEnvName } from "../env.ts";

export interface Problems {
  errors: [path: string, message: string][];
  warnings: string[];
}

/** Reports every repeat of `key(item)` in `items` at `<base>.<index>.<field>`. */
function unique<T>(
  items: readonly T[] | undefined,
  key: (item: T) => string | undefined,
  base: string,
  field: string,
  what: string,
  problems: Problems,
): Set<string> {
  const seen = new Set<string>();
  (items ?? []).forEach((item, index) => {
    const value = key(item);
    if (value === undefined) return;
    if (seen.has(value)) {
      problems.errors.push([`${base}.${index}.${field}`, `duplicate ${what} "${value}"`]);
    }
    seen.add(value);
  });
  return seen;
}

export function checkAdmission(config: Config, problems: Problems): void {
  unique(
    config.admission.blocks,
    (b) => b.name,
    "admission.blocks",
    "name",
    "block name",
    problems,
  );
}

export function checkAccess(config: Config, problems: Problems): void {
  const access = config.access;
  const groups = unique(
    access.iam_groups,
    (g) => g.name,
    "access.iam_groups",
    "name",
    "group name",
    problems,
  );
  unique(access.iam_users, (u) => u.name, "access.iam_users", "name", "user name", problems);
  unique(
    access.iam_users,
    (u) => u.access_key_id,
    "access.iam_users",
    "access_key_id",
    "access key",
    problems,
  );
  (access.iam_users ?? []).forEach((user, index) => {
    if (access.access_key_id !== undefined && user.access_key_id === access.access_key_id) {
      problems.errors.push([
        `access.iam_users.${index}.access_key_id`,
        "equals the bootstrap access.access_key_id",
      ]);
    }
  });
  const providers = unique(
    access.auth_providers,
    (p) => p.name,
    "access.auth_providers",
    "name",
    "provider name",
    problems,
  );
  // References are only checked where YAML is authoritative; in gui mode the database may
  // hold the groups and providers these records name.
  if (access.iam_mode !== "declarative") return;
  (access.iam_users ?? []).forEach((user, index) => {
    user.groups.forEach((group, g) => {
      if (!groups.has(group)) {
        problems.errors.push([`access.iam_users.${index}.groups.${g}`, `unknown group "${group}"`]);
      }
    });
  });
  (access.group_mapping_rules ?? []).forEach((rule, index) => {
    if (rule.provider != null && !providers.has(rule.provider)) {
      problems.errors.push([
        `access.group_mapping_rules.${index}.provider`,
        `unknown provider "${rule.provider}"`,
      ]);
    }
    if (!groups.has(rule.group)) {
      problems.errors.push([
        `access.group_mapping_rules.${index}.group`,
        `unknown group "${rule.group}"`,
      ]);
    }
  });
}

function checkEncryption(
  block: EncryptionConfig | undefined,
  path: string,
  envHint: string,
  problems: Problems,
  backendType: string | undefined,
): void {
  if ((block?.mode === "sse-s3" || block?.mode === "sse-kms") && backendType === "filesystem") {
    problems.errors.push([
      `${path}.mode`,
      `"${block.mode}" is encryption by an S3 store and cannot apply to a filesystem backend ` +
      "(use aes256-gcm-proxy)",
    ]);
  }
  if (block?.mode === "aes256-gcm-proxy" && block.key === undefined) {
    problems.errors.push([
      `${path}.key`,
      `required for mode aes256-gcm-proxy (set it or ${envHint})`,
    ]);
  }
}

export function checkStorage(config: Config, problems: Problems): void {
  const storage = config.storage;
  const singles = [
    storage.backend && "backend",
    storage.s3 !== undefined && "s3",
    storage.filesystem !== undefined && "filesystem",
  ].filter(Boolean);
  if (singles.length > 1) {
    problems.errors.push([
      "storage",
      `only one of backend / s3 / filesystem may be set, got ${singles.join(" and ")}`,
    ]);
  }
  if (storage.s3 === undefined) {
    for (const key of ["region", "access_key_id", "secret_access_key", "force_path_style"]) {
      if (storage[key as keyof typeof storage] !== undefined) {
        problems.errors.push([`storage.${key}`, "only applies together with the s3 shorthand"]);
      }
    }
  }
  checkEncryption(
    storage.backend_encryption,
    "storage.backend_encryption",
    "SVC_ENCRYPTION_KEY",
    problems,
    storage.backends.length > 0
      ? undefined
      : storage.s3 !== undefined
      ? "s3"
      : storage.backend?.type ?? "filesystem",
  );

  const names = unique(
    storage.backends,
    (b) => b.name,
    "storage.backends",
    "name",
    "backend name",
    problems,
  );
  unique(
    storage.backends,
    (b) => backendEnvName(b.name),
    "storage.backends",
    "name",
    "backend environment name (SVC_BACKEND_<NAME>_*)",
    problems,
  );
  storage.backends.forEach((backend, index) => {
    const path = `storage.backends.${index}`;
    if (backend.type === "filesystem" && backend.path === undefined) {
      problems.errors.push([`${path}.path`, "required for a filesystem backend"]);
    }
    checkEncryption(
      backend.encryption,
      `${path}.encryption`,
      `SVC_BACKEND_${backendEnvName(backend.name)}_ENCRYPTION_KEY`,
      problems,
      backend.type,
    );
  });
  if (storage.default_backend !== undefined && !names.has(storage.default_backend)) {
    problems.warnings.push(
      `storage.default_backend: "${storage.default_backend}" does not name an entry of ` +
        "storage.backends; it was cleared",
    );
    delete storage.default_backend;
  }

  for (const [bucket, policy] of Object.entries(storage.buckets)) {
    const path = `storage.buckets.${bucket}`;
    if (!BUCKET_NAME.test(bucket)) {
      problems.errors.push([
        path,
        "bucket names are 3-63 characters of lowercase letters, digits, '.' and '-'",
      ]);
    }
    if (policy.backend !== undefined && !names.has(policy.backend)) {
      problems.errors.push([
        `${path}.backend`,
        names.size > 0
          ? `unknown backend "${policy.backend}" (expected one of ${[...names].join(", ")})`
          : `"${policy.backend}": no named backends are configured (storage.backends)`,
      ]);
    }
    if (policy.public === true) {
      if (policy.public_prefixes.length > 0) {
        problems.errors.push([
          `${path}.public`,
          "public: true cannot be combined with a non-empty public_prefixes; use one of them",
        ]);
      } else policy.public_prefixes = [""];
    }
    delete policy.public;
  }

  const replication = storage.replication;
  const heartbeat = parseDuration(replication.heartbeat_interval) ?? 0;
  const lease = parseDuration(replication.lease_ttl) ?? 0;
  if (heartbeat >= lease) {
    problems.errors.push([
      "storage.replication.heartbeat_interval",
      `must be less than lease_ttl (${replication.lease_ttl})`,
    ]);
  }
  unique(
    replication.rules,
    (r) => r.name,
    "storage.replication.rules",
    "name",
    "rule name",
    problems,
  );

  const lifecycle = storage.lifecycle;
  unique(lifecycle.rules, (r) => r.name, "storage.lifecycle.rules", "name", "rule name", problems);
  lifecycle.rules.forEach((rule, index) => {
    const path = `storage.lifecycle.rules.${index}`;
    if (rule.action === "delete" && rule.expire_after === undefined) {
      problems.errors.push([`${path}.expire_after`, "required for action delete"]);
    }
    if (
      typeof rule.action === "object" && rule.action.type === "retain-newest" &&
      rule.expire_after !== undefined
    ) {
      problems.warnings.push(
        `${path}.expire_after: does not apply to action retain-newest; ignored`,
      );
    }
  });
}

export function checkAdvanced(config: Config, problems: Problems): void {
  const { tls, event_delivery: events, bootstrap_password_hash: hash } = config.advanced;
  if (hash !== undefined && normalizeBcryptHash(hash) === null) {
    problems.errors.push([
      "advanced.bootstrap_password_hash",
      `expected a bcrypt hash ("$2b$…", 60 characters) or its base64, got ${hash.length} ` +
      "characters",
    ]);
  }
  if ((tls.cert_path === undefined) !== (tls.key_path === undefined)) {
    problems.errors.push([
      tls.cert_path === undefined ? "advanced.tls.cert_path" : "advanced.tls.key_path",
      "cert_path and key_path must be set together",
    ]);
  }
  const path = "advanced.event_delivery";
  const hasUrl = events.webhook_url !== undefined || events.webhook_urls.length > 0;
  if (events.enabled && !events.outbox) {
    problems.errors.push([`${path}.outbox`, "delivery (enabled: true) needs the outbox on"]);
  }
  if (events.format === "raw") {
    if (events.enabled && !hasUrl) {
      problems.errors.push([
        `${path}.webhook_url`,
        "enabled delivery needs webhook_url or webhook_urls",
      ]);
    }
  } else {
    const bot = events.slack_bot_token !== undefined;
    if (bot && events.slack_channel === undefined) {
      problems.errors.push([`${path}.slack_channel`, "required with slack_bot_token"]);
    }
    if (events.enabled && !bot && events.webhook_url === undefined) {
      problems.errors.push([
        `${path}.webhook_url`,
        "format slack needs webhook_url (incoming webhook) or slack_bot_token (bot token)",
      ]);
    }
    if (!bot && events.slack_routes.length > 0) {
      problems.errors.push([
        `${path}.slack_routes`,
        "only used in bot-token mode (slack_bot_token)",
      ]);
    }
  }
}
