/**
 * The `storage` mapping of an operator's config document, for code that edits the document
 * before applying it (the backend and bucket admin routes, a migration's routing flip).
 */
import { ConfigError } from "./schema/schema-common.ts";

/**
 * The `storage` mapping of a document (created when absent). A document whose `storage` is not a
 * mapping is invalid config: the admin API answers 422 `invalid_config`.
 */
export function storageOf(document: Record<string, unknown>): Record<string, unknown> {
  const storage = document.storage;
  if (storage === undefined || storage === null) {
    const created: Record<string, unknown> = {};
    document.storage = created;
    return created;
  }
  if (typeof storage !== "object" || Array.isArray(storage)) {
    throw new ConfigError("storage: expected a mapping in the config document");
  }
  return storage as Record<string, unknown>;
}
