/**
 * A selection of objects as one streamed ZIP (fflate, entries stored uncompressed: artifacts are
 * mostly compressed already, and storing keeps the server's CPU out of the download). Memory is
 * bounded by the stream's 1 MiB queue whatever the selection's size: each object is read from S3
 * only as fast as the client takes the archive.
 *
 * Every entry is resolved before the first byte (HEAD for named keys, a listing for a prefix), so
 * a missing or forbidden object is a clean JSON error, not a broken download. fflate writes no
 * ZIP64 records, so a selection past 4 GB (or 65,535 entries) is refused up front. Entry names are
 * the keys relative to the selection's folder, with `.`/`..` segments and leading slashes
 * neutralised (an archive never extracts outside its folder).
 */
import { Zip, ZipPassThrough } from "fflate";
import { getLogger } from "../../observability/mod.ts";
import { childrenNamed, childText, parseXml } from "../../s3/mod.ts";
import { AdminError } from "../admin-error.ts";
import { type ActingClient, checkTarget, s3Failure, s3Path } from "./s3-internal.ts";

const log = getLogger("svc::admin");

const MAX_ZIP_BYTES = 4_000_000_000;
const MAX_ZIP_ENTRIES = 65_535;
const QUEUE_BYTES = 1 << 20;

interface Entry {
  key: string;
  size: number;
  modified: Date;
}

/** The folder part of `prefix` ("" when it names no folder). */
function folderOf(text: string): string {
  return text.slice(0, text.lastIndexOf("/") + 1);
}

/** The longest folder every key shares. */
function commonFolder(keys: string[]): string {
  let folder = folderOf(keys[0]);
  for (const key of keys) while (!key.startsWith(folder)) folder = folderOf(folder.slice(0, -1));
  return folder;
}

export function entryName(key: string, folder: string): string {
  return key.slice(folder.length).split("/")
    .filter((segment, i, all) => segment !== "" || i === all.length - 1)
    .map((segment) => segment === "." || segment === ".." ? "_" : segment)
    .join("/");
}

async function headAll(s3: ActingClient, bucket: string, keys: string[]): Promise<Entry[]> {
  const entries: Entry[] = [];
  for (const key of keys) {
    const response = await s3.send("HEAD", s3Path(bucket, key));
    if (!response.ok) {
      const failure = await s3Failure(response);
      throw new AdminError(failure.code, `"${key}": ${failure.message}`, failure.details);
    }
    entries.push({
      key,
      size: Number(response.headers.get("content-length")),
      modified: new Date(response.headers.get("last-modified") ?? Date.now()),
    });
  }
  return entries;
}

async function listAll(s3: ActingClient, bucket: string, prefix: string): Promise<Entry[]> {
  const entries: Entry[] = [];
  let token: string | undefined;
  do {
    const query = new URLSearchParams({ "list-type": "2", prefix });
    if (token) query.set("continuation-token", token);
    const response = await s3.send("GET", s3Path(bucket), { query: query.toString() });
    if (!response.ok) throw await s3Failure(response);
    const doc = parseXml(await response.text());
    for (const object of childrenNamed(doc, "Contents")) {
      entries.push({
        key: childText(object, "Key")!,
        size: Number(childText(object, "Size")),
        modified: new Date(childText(object, "LastModified") ?? Date.now()),
      });
      if (entries.length > MAX_ZIP_ENTRIES) {
        throw new AdminError("bad_request", `More than ${MAX_ZIP_ENTRIES} objects to zip`);
      }
    }
    token = childText(doc, "NextContinuationToken") ?? undefined;
  } while (token);
  return entries;
}

export async function zipObjects(
  s3: ActingClient,
  bucket: string,
  selection: { keys: string[] } | { prefix: string },
): Promise<{ stream: ReadableStream<Uint8Array>; entries: number }> {
  const named = "keys" in selection;
  if (named && selection.keys.length > MAX_ZIP_ENTRIES) {
    throw new AdminError("bad_request", `More than ${MAX_ZIP_ENTRIES} objects to zip`);
  }
  const all = named
    ? await headAll(s3, bucket, selection.keys)
    : await listAll(s3, bucket, selection.prefix);
  // Folder markers (`photos/`, empty) are not files.
  const entries = all.filter((e) => !(e.key.endsWith("/") && e.size === 0));
  // A listed key no URL can address (a `..` segment, stored behind svc's back on an S3 backend)
  // is a JSON error now, not a stream that fails halfway.
  for (const entry of entries) checkTarget(bucket, entry.key);
  const total = entries.reduce((sum, e) => sum + e.size, 0);
  if (total > MAX_ZIP_BYTES) {
    throw new AdminError(
      "bad_request",
      `The selection holds ${total} bytes; a ZIP download is limited to ${MAX_ZIP_BYTES}`,
    );
  }
  const folder = named ? commonFolder(selection.keys) : folderOf(selection.prefix);
  return { stream: archive(s3, bucket, entries, folder), entries: entries.length };
}

function archive(
  s3: ActingClient,
  bucket: string,
  entries: Entry[],
  folder: string,
): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let wake: (() => void) | null = null;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    pull() {
      wake?.();
    },
    cancel() {
      cancelled = true;
      wake?.();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: QUEUE_BYTES }));
  const zip = new Zip((err, chunk, final) => {
    if (cancelled) return;
    if (err) return controller.error(err);
    controller.enqueue(chunk);
    if (final) controller.close();
  });
  const roomInQueue = async () => {
    while (!cancelled && (controller.desiredSize ?? 0) <= 0) {
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  };
  (async () => {
    for (const entry of entries) {
      if (cancelled) return;
      const file = new ZipPassThrough(entryName(entry.key, folder));
      file.mtime = entry.modified;
      zip.add(file);
      const response = await s3.send("GET", s3Path(bucket, entry.key));
      if (!response.ok || !response.body) throw await s3Failure(response);
      for await (const chunk of response.body) {
        file.push(chunk);
        await roomInQueue();
        if (cancelled) return; // leaving the loop cancels the object's body
      }
      file.push(new Uint8Array(0), true);
    }
    zip.end();
  })().catch((err) => {
    log.warn("a ZIP download ended early", { bucket, error: (err as Error).message });
    if (!cancelled) controller.error(err);
  });
  return stream;
}
