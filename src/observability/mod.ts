// The observability room's surface: everything another room may use of it. Generated from what
// the other rooms import (scripts/imports/make-mods.ts); the import check keeps every
// entry into the room going through this file.

export { accessNoteOf, formatAccessLine, noteAccess } from "./access/access-line.ts";
export { accessLogTarget, openAccessLog } from "./access/access-writer.ts";
export type { AccessLogWriter } from "./access/access-writer.ts";
export { AuditRing } from "./audit-ring.ts";
export type { AuditFn } from "./audit-ring.ts";
export { LOG_LEVELS, parseLevel, resolveLogLevel } from "./log-level.ts";
export type { LogLevel } from "./log-level.ts";
export { LogRing, maskKey } from "./log-ring.ts";
export type { LogEntry, LogFilterQuery } from "./log-ring.ts";
export { activeLogging, configureLogging, getLogger, setLogFilter } from "./log.ts";
export type { Logging } from "./log.ts";
export { createMetrics } from "./metrics.ts";
export type { Metrics } from "./metrics.ts";
export type { AuthCounts } from "./metrics/auth-metrics.ts";
export { requestBytesOf, responseBytesOf } from "./metrics/body-sizes.ts";
export { operatorOperation } from "./metrics/http-metrics.ts";
export type { S3OperationLabel } from "./metrics/http-metrics.ts";
export type { ConfigSyncOutcome, IamIndexStats, IamMetrics } from "./metrics/iam-metrics.ts";
export type { DeliveryResult, OutboxMetrics, RequestResult } from "./metrics/outbox-metrics.ts";
