/**
 * Worker thread that computes md5 and sha256 of large bodies, so hashing runs on a second core
 * while the main thread moves bytes between the socket and the disk. Protocol (one job per id):
 * `{id, buffer, length}` feeds bytes in a transferred buffer, which is transferred back with the
 * acknowledgement `{id, buffer}` so the sender can reuse it (no garbage, flat memory);
 * `{id, end: true}` answers `{id, md5, sha256}`; `{id, abort: true}` forgets the job.
 */
/// <reference lib="deno.worker" />
import { createHash, type Hash } from "node:crypto";

interface Job {
  /** null when the sender does not need an md5 (multipart objects take their ETag from parts). */
  md5: Hash | null;
  sha256: Hash;
}

type Message =
  | { id: number; buffer: ArrayBuffer; length: number; md5: boolean }
  | { id: number; end: true }
  | { id: number; abort: true };

const jobs = new Map<number, Job>();

function job(id: number, withMd5 = true): Job {
  let found = jobs.get(id);
  if (!found) {
    found = { md5: withMd5 ? createHash("md5") : null, sha256: createHash("sha256") };
    jobs.set(id, found);
  }
  return found;
}

self.onmessage = (event: MessageEvent<Message>) => {
  const message = event.data;
  if ("buffer" in message) {
    const bytes = new Uint8Array(message.buffer, 0, message.length);
    const { md5, sha256 } = job(message.id, message.md5);
    md5?.update(bytes);
    sha256.update(bytes);
    self.postMessage({ id: message.id, buffer: message.buffer }, [message.buffer]);
  } else if ("end" in message) {
    const { md5, sha256 } = job(message.id);
    jobs.delete(message.id);
    self.postMessage({
      id: message.id,
      md5: md5?.digest("hex") ?? "",
      sha256: sha256.digest("hex"),
    });
  } else {
    jobs.delete(message.id);
  }
};
