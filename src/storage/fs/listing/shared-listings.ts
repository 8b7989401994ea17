/**
 * One listing cache per data directory, whichever backends are open on it. A config reload
 * opens a new FilesystemBackend on the same root (runtime/storage-stack.ts) while requests in
 * flight finish on the old one: both must patch the one cache with svc's own changes, or a PUT
 * finishing on the old backend is, to the new backend's cache, a change by another program, and
 * could stay unlisted for up to the unverified limit. The cache lives as long as a backend on
 * the root does (a weak reference here), so the many roots a test process opens are not kept.
 */

import { DirectoryListings, type ListingOptions } from "./fs-sorted-dir.ts";

const byRoot = new Map<string, WeakRef<DirectoryListings>>();

/**
 * The listings of the data directory `root` (an absolute, resolved path): those of a backend
 * still open on it, else new ones. A second open must ask for the same options (tests set them
 * on the first open of a fresh root only).
 */
export function sharedListings(root: string, options: ListingOptions = {}): DirectoryListings {
  for (const [path, ref] of byRoot) {
    if (ref.deref() === undefined) byRoot.delete(path);
  }
  const open = byRoot.get(root)?.deref();
  if (open) {
    if (!open.matches(options)) {
      throw new Error(`Data directory "${root}" is already open with other listing options`);
    }
    return open;
  }
  const listings = new DirectoryListings(options);
  byRoot.set(root, new WeakRef(listings));
  return listings;
}
