/**
 * Worker thread that computes md5 and sha256 of large bodies, so hashing runs on a second core
 * while the main thread moves bytes between the socket and the disk. Protocol (one job per id):
 * `{id, chunk}` feeds bytes and is acknowledged with `{id, acked}` (the sender's backpressure);
 * `{id, end: true}` answers `{id, md5, sha256}`; `{id, abort: true}` forgets the job.
 */
/// <reference lib="deno.worker" />
import { createHash, type Hash } from "node:crypto";

interface Job {
  md5: Hash;
  sha256: Hash;
}

type Message =
  | { id: number; chunk: Uint8Array }
  | { id: number; end: true }
  | { id: number; abort: true };

const jobs = new Map<number, Job>();

self.onmessage = (event: MessageEvent<Message>) => {
  const message = event.data;
  if ("chunk" in message) {
    let job = jobs.get(message.id);
    if (!job) jobs.set(message.id, job = { md5: createHash("md5"), sha256: createHash("sha256") });
    job.md5.update(message.chunk);
    job.sha256.update(message.chunk);
    self.postMessage({ id: message.id, acked: message.chunk.byteLength });
  } else if ("end" in message) {
    const job = jobs.get(message.id) ?? { md5: createHash("md5"), sha256: createHash("sha256") };
    jobs.delete(message.id);
    self.postMessage({
      id: message.id,
      md5: job.md5.digest("hex"),
      sha256: job.sha256.digest("hex"),
    });
  } else {
    jobs.delete(message.id);
  }
};
