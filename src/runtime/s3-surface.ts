/**
 * The S3 surface over the services: the credential store, the SigV4 authenticator and the S3
 * handler. IAM (its keys and its access hooks) is given whole at construction; without it the
 * bootstrap pair is the only key and authentication decides everything.
 */
import { Authenticator } from "../auth/mod.ts";
import { BootstrapCredentials, ChainedCredentials, type CredentialStore } from "../iam/mod.ts";
import type { Config } from "../config/mod.ts";
import type { BucketUsage } from "../objects/mod.ts";
import { bucketPolicySource, createS3Handler, type S3Access, type S3Handler } from "../s3/mod.ts";
import type { ConfigHolder, Services } from "./services.ts";

/** What IAM brings to S3: its keys (asked before the bootstrap pair) and its access hooks. */
export interface IamHooks {
  credentials: CredentialStore;
  access: S3Access;
}

export interface S3Surface {
  credentials: () => CredentialStore;
  authenticator: Authenticator;
  s3: S3Handler;
  /**
   * Sets how quotas judge usage once the admin plane knows (in a fleet: every instance's writes);
   * until then, and alone, the local counter.
   */
  useQuotaUsage(view: QuotaUsage | null): void;
}

/** The usage a quota judges, from this instance's counter. */
export type QuotaUsage = (bucket: string, local: BucketUsage) => Promise<BucketUsage>;

/** Settings the authenticator reads per request from the current snapshot. */
function authSettings(holder: ConfigHolder) {
  return () => {
    const { access, advanced } = holder.current;
    return {
      open: access.authentication?.trim().toLowerCase() === "none",
      clockSkewSeconds: advanced.clock_skew_seconds,
      replayWindowSeconds: advanced.replay_window_secs,
      trustProxyHeaders: advanced.trust_proxy_headers,
      lockout: {
        maxAttempts: advanced.rate_limit_max_attempts,
        windowSeconds: advanced.rate_limit_window_secs,
        lockoutSeconds: advanced.rate_limit_lockout_secs,
      },
    };
  };
}

export function openS3Surface(services: Services, iam?: IamHooks): S3Surface {
  const holder = services.config;
  let quotaView: QuotaUsage | null = null;
  // One credential store per config snapshot, rebuilt when a change swaps the snapshot.
  let keys: { config: Config; store: CredentialStore } | undefined;
  const credentials = () => {
    const current = holder.current;
    if (keys?.config !== current) {
      const { access_key_id, secret_access_key } = current.access;
      const bootstrap = new BootstrapCredentials(access_key_id, secret_access_key);
      keys = {
        config: current,
        // IAM first: after POST /migrate the bootstrap pair is an IAM user, governed by IAM.
        store: iam ? new ChainedCredentials([iam.credentials, bootstrap]) : bootstrap,
      };
    }
    return keys.store;
  };
  const auditRing = services.logging.auditRing;
  const authenticator = new Authenticator(
    credentials,
    authSettings(holder),
    (event, fields) => auditRing.record(event, fields),
  );
  const s3 = createS3Handler({
    authenticator,
    onComplete: (sample) => services.metrics.observeRequest(sample),
    // Read per request: a config change that moves the data directory swaps the whole stack.
    services: {
      get objects() {
        return services.storage.objects;
      },
      get multipart() {
        return services.storage.multipart;
      },
      credentials,
      access: iam?.access,
      admission: services.admission,
      bucketPolicy: bucketPolicySource(() => holder.current),
      usage: services.usage,
      quotaUsage: (bucket, local) => quotaView?.(bucket, local) ?? Promise.resolve(local),
      maintenanceGate: services.maintenanceGate,
    },
    semaphore: services.semaphore,
    requestTimeoutMs: () => holder.current.advanced.request_timeout_secs * 1000,
    bodyStallMs: () => holder.current.advanced.body_stall_timeout_secs * 1000,
    formFieldsMs: () => holder.current.advanced.header_timeout_secs * 1000,
    debugHeaders: () => holder.current.advanced.debug_headers,
    trustProxyHeaders: () => holder.current.advanced.trust_proxy_headers,
  });
  return {
    credentials,
    authenticator,
    s3,
    useQuotaUsage: (view) => void (quotaView = view),
  };
}
