/**
 * What every admin route can read from its Hono context. The session guard sets `principal`;
 * the admin app sets `clientIp` and `requestId` before any route runs.
 */
export interface AdminPrincipal {
  /** `$bootstrap` for the bootstrap password, else the IAM user name. */
  user: string;
  /** May use the admin console (false for a browse-only session). */
  admin: boolean;
  /** Opaque id of the session (not the cookie value); for audit entries and logout. */
  sessionId: string;
  /**
   * The IAM user's access key the session was opened under (its rotation ends the session);
   * absent or null for sessions of no IAM user.
   */
  accessKeyId?: string | null;
}

export interface AdminEnv {
  Variables: {
    clientIp: string;
    /** Whether the client reached svc over TLS (directly or through a trusted proxy). */
    https: boolean;
    requestId: string;
    principal: AdminPrincipal;
  };
}

/** Where a session opened by this request comes from (`AdminSessions.issue`). */
export function sessionOrigin(vars: { clientIp: string; https?: boolean }): {
  ip: string;
  https: boolean;
} {
  return { ip: vars.clientIp, https: vars.https === true };
}

/** Who did it and from where: the fields every admin audit entry carries. */
export function actorFields(
  vars: { clientIp: string; principal?: AdminPrincipal },
): Record<string, unknown> {
  return { user: vars.principal?.user ?? "$anonymous", ip: vars.clientIp };
}
