/**
 * Builds the multipart upload stores over the bucket router: the local store for filesystem
 * buckets, the backend-resident one for buckets on an S3 backend (when any is configured), and
 * the router as the delta layer must see it (internal-keys-guard.ts hides the backend-resident
 * state from clients).
 */
import { SvcError } from "../../lib/mod.ts";
import type { Backend, BucketRouter, S3Client } from "../../storage/mod.ts";
import { BackendUploads } from "./backend-uploads.ts";
import type { CompletedUploads } from "./completed-uploads.ts";
import { InternalKeysGuard } from "./internal-keys-guard.ts";
import { LocalUploads } from "./local-uploads.ts";
import type { MultipartStore } from "./multipart-store.ts";
import { RoutedUploads } from "./routed-uploads.ts";

export interface UploadStores {
  store: RoutedUploads;
  /** The router for the delta layer: with the backend-resident state hidden. */
  guarded: Backend & { identityOf(bucket: string): string };
}

export function uploadStores(
  router: BucketRouter,
  store: MultipartStore,
  completed: CompletedUploads,
  /** A raw client per S3 backend, by backend name. */
  clients: ReadonlyMap<string, S3Client>,
): UploadStores {
  const local = new LocalUploads(store, completed);
  if (clients.size === 0) {
    return { store: new RoutedUploads(local, null, () => Promise.resolve(false)), guarded: router };
  }
  const onS3 = async (bucket: string) => (await router.route(bucket)).backend.kind === "s3";
  const backend = new BackendUploads({
    stack: router,
    locate: async (bucket) => {
      const route = await router.route(bucket);
      const client = clients.get(route.name);
      if (client === undefined) {
        throw new SvcError("InternalError", `Backend "${route.name}" of "${bucket}" is not S3`);
      }
      return { client, real: route.real, bucket };
    },
    buckets: async () => {
      const names = (await router.listBuckets()).map((entry) => entry.name);
      const onS3Names: string[] = [];
      for (const name of names) if (await onS3(name).catch(() => false)) onS3Names.push(name);
      return onS3Names;
    },
  });
  return {
    store: new RoutedUploads(local, backend, onS3),
    guarded: new InternalKeysGuard(router, (bucket) => backend.purge(bucket)),
  };
}
