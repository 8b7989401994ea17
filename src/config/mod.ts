// The config room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { backendFingerprint, backendPlanOf, stateDirOf } from "./backend-plan.ts";
export type { BackendSpec } from "./backend-plan.ts";
export { normalizeBcryptHash } from "./bcrypt-hash.ts";
export { ConfigPersistError, writeConfigFile } from "./config-file.ts";
export type { ApplyOutcome, ApplyRequest, ConfigPort } from "./config-port.ts";
export { configSections, exportConfig, exportDocument } from "./document/export.ts";
export { mergePatch } from "./document/merge-patch.ts";
export { keepOperatorValues } from "./document/running-echo.ts";
export { carrySecrets, dropNullSecrets, redactSecrets } from "./document/secret-carry.ts";
export { normalizeLegacy } from "./legacy.ts";
export {
  buildConfig,
  expandPlaceholders,
  loadConfig,
  parseDocument,
  parseListenAddress,
} from "./load.ts";
export { configJsonSchema } from "./schema/json-schema.ts";
export { ANONYMOUS_METHODS } from "./schema/schema-admission.ts";
export type { AdmissionBlock } from "./schema/schema-admission.ts";
export { effectiveMaxTotalMultipartBytes } from "./schema/schema-advanced.ts";
export type { EventDeliveryConfig } from "./schema/schema-advanced.ts";
export {
  ConfigError,
  isIp,
  isIpOrCidr,
  parseDuration,
  unknownTemplateVariables,
} from "./schema/schema-common.ts";
export type { LifecycleRule, ReplicationRule } from "./schema/schema-jobs.ts";
export { namedBackendSchema } from "./schema/schema-storage.ts";
export type { BucketPolicy, EncryptionConfig, NamedBackend } from "./schema/schema-storage.ts";
export type { AccessConfig, AdvancedConfig, Config } from "./schema/schema.ts";
export { storageOf } from "./storage-section.ts";
