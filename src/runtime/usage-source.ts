/**
 * What the usage scans read, over the storage stack in use (read through `stack()` each call: a
 * config change may replace it): the object service's logical listing, and the baselines of
 * deltaspaces straight from the bucket router (below the delta store, which hides them).
 */
import { referenceNameFor } from "../delta/mod.ts";
import type { ScanSource } from "../objects/mod.ts";
import type { StorageStack } from "./storage-stack.ts";

export function usageScanSource(stack: () => StorageStack): Required<ScanSource> {
  return {
    list: (bucket, options) => stack().objects.listObjects(bucket, options),
    baselineSize: async (bucket, deltaspace) =>
      (await stack().router.headObject(bucket, referenceNameFor(deltaspace)))?.storedSize ?? null,
  };
}
