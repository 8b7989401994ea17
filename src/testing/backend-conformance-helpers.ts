/**
 * Helpers of the backend conformance suite (backend-conformance.ts): writing and reading
 * objects through a Backend, and a model of one listing page (the S3 rules as the filesystem
 * backend implements them) to check real pages against.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { Backend, ListOptions, ListPage, ObjectMeta } from "../storage/backend.ts";

export const encoder = new TextEncoder();

export function hex(algorithm: string, bytes: Uint8Array): string {
  return createHash(algorithm).update(bytes).digest("hex");
}

import { metaFor } from "./object-fixtures.ts";
import { commonPrefixOf, compareUtf8 } from "../lib/key-order.ts";

export { metaFor };

export function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      if (bytes.length > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

export async function put(
  backend: Backend,
  bucket: string,
  key: string,
  body: string | Uint8Array,
  extra: Partial<ObjectMeta> = {},
): Promise<ObjectMeta> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const staged = await backend.stageObject(bucket, key, streamOf(bytes));
  assert.equal(staged.size, bytes.length);
  const meta = metaFor(bytes, extra);
  await staged.commit(meta);
  return meta;
}

export async function read(
  backend: Backend,
  bucket: string,
  key: string,
  range?: [number, number],
) {
  const got = await backend.getObject(
    bucket,
    key,
    range ? { start: range[0], end: range[1] } : undefined,
  );
  if (!got) return null;
  return new TextDecoder().decode(await new Response(got.body).arrayBuffer());
}

export { rejectsWith } from "./svc-error-assertions.ts";

/** Without the field each backend reports on its own clock. */
export function comparable(meta: ObjectMeta): Omit<ObjectMeta, "lastModified"> {
  const { lastModified: _ignored, ...rest } = meta;
  return rest;
}

/** What one listing page must hold, computed from the sorted key set (the S3 rules). */
export function expectedPage(keys: string[], options: ListOptions): {
  entries: string[];
  isTruncated: boolean;
} {
  const { prefix, startAfter, maxKeys } = options;
  const delimiter = options.delimiter || undefined;
  const entries: string[] = [];
  for (const key of [...keys].sort(compareUtf8)) {
    if (!key.startsWith(prefix)) continue;
    if (startAfter !== undefined && compareUtf8(key, startAfter) <= 0) continue;
    const rollUp = delimiter ? commonPrefixOf(key, prefix, delimiter) : undefined;
    if (rollUp !== undefined) {
      if (startAfter !== undefined && compareUtf8(rollUp, startAfter) <= 0) continue;
      if (entries[entries.length - 1] === rollUp) continue;
    }
    entries.push(rollUp ?? key);
  }
  return { entries: entries.slice(0, maxKeys), isTruncated: entries.length > maxKeys };
}

export function entriesOf(page: ListPage): string[] {
  return [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort(compareUtf8);
}

/** Pages through a whole listing, checking each page against the model. */
export async function checkPaging(
  backend: Backend,
  bucket: string,
  keys: string[],
  options: Omit<ListOptions, "startAfter">,
): Promise<void> {
  let startAfter: string | undefined;
  const seen: string[] = [];
  for (let pages = 0; pages < 500; pages++) {
    const page = await backend.listObjects(bucket, { ...options, startAfter });
    const expected = expectedPage(keys, { ...options, startAfter });
    const what = JSON.stringify({ ...options, startAfter });
    assert.deepEqual(entriesOf(page), expected.entries, what);
    assert.equal(page.isTruncated, expected.isTruncated, what);
    seen.push(...entriesOf(page));
    if (!page.isTruncated) {
      assert.equal(new Set(seen).size, seen.length, `no entry twice: ${what}`);
      return;
    }
    assert.equal(page.nextStartAfter, expected.entries[expected.entries.length - 1], what);
    startAfter = page.nextStartAfter;
  }
  assert.fail("listing did not end");
}
