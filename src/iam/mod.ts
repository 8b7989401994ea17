// The iam room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { BootstrapCredentials, ChainedCredentials } from "./credentials.ts";
export type { CredentialStore, Principal } from "./credentials.ts";
export { declarativeIamExport } from "./declarative-export.ts";
export { desiredIam, hasNoUsersOrGroups, parseProvider, parseRule } from "./declarative.ts";
export type { DesiredIdentity, DesiredProvider, DesiredRule } from "./declarative.ts";
export type { Decision } from "./evaluate.ts";
export { BOOTSTRAP_PRINCIPAL, IamCredentials, IamIndex, IamIndexHolder } from "./index.ts";
export type { KeyVisibility } from "./key-visibility.ts";
export { generateAccessKeyId, generateSecretAccessKey } from "./keys.ts";
export { mappedGroups, MATCH_TYPES } from "./mapping-rules.ts";
export type { MappingRule } from "./mapping-rules.ts";
export {
  assertNotBootstrapKey,
  IAM_ACTIONS,
  IamError,
  IP_OPERATORS,
  STRING_OPERATORS,
  validateAccessKeyId,
  validateGroupNames,
  validateName,
  validatePermissions,
  validateSecret,
} from "./model.ts";
export type {
  AuthSource,
  GroupRecord,
  IamSnapshotData,
  Permission,
  UserRecord,
  UserWithSecret,
} from "./model.ts";
export { POLICY_TEMPLATES } from "./policies.ts";
export { isNoop, planReconcile, previewLine, summaryLine } from "./reconcile.ts";
export type { IamState, ReconcilePlan } from "./reconcile.ts";
