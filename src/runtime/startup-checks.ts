/**
 * Refusals and warnings decided before the listener opens. svc never starts open by accident:
 * without credentials, `authentication: none` must be written explicitly.
 */
import type { AccessConfig } from "../config/mod.ts";

export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartupError";
  }
}

/** Throws StartupError when the server would be open without being asked; returns warnings. */
export function checkStartupAuth(access: AccessConfig): string[] {
  const mode = access.authentication?.trim().toLowerCase();
  const hasKey = Boolean(access.access_key_id);
  const hasSecret = Boolean(access.secret_access_key);
  if (hasKey !== hasSecret) {
    throw new StartupError(
      "access.access_key_id and access.secret_access_key must be set together " +
        "(or SVC_ACCESS_KEY_ID and SVC_SECRET_ACCESS_KEY)",
    );
  }
  if (mode === "none") {
    return ["authentication is none: every S3 request is accepted without a signature"];
  }
  if (mode !== undefined && mode !== "sigv4" && mode !== "") {
    throw new StartupError(
      `access.authentication: expected "none" or "sigv4", got "${access.authentication}"`,
    );
  }
  if (!hasKey) {
    throw new StartupError(
      "No credentials configured: set access.access_key_id and access.secret_access_key " +
        "(or SVC_ACCESS_KEY_ID / SVC_SECRET_ACCESS_KEY), or set access.authentication: none " +
        "to run without authentication",
    );
  }
  return [];
}
