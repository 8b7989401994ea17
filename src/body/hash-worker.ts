/**
 * Worker thread that hashes large bodies, so md5 and sha256 each run on their own core while the
 * main thread moves bytes between the socket and the disk. The bytes are never copied to the
 * worker: the sender fills slots of a SharedArrayBuffer ring and names the slot. Protocol (one job
 * per id; see hash-pool.ts):
 * `{id, ring, algorithms}` opens a job; `{id, offset, length}` hashes that part of the ring and is
 * acknowledged with `{id}` (the sender may then reuse the slot); `{id, end: true}` answers
 * `{id, digests}` (hex per algorithm); `{id, abort: true}` forgets the job.
 */
/// <reference lib="deno.worker" />
import { createHasher, type HashAlgorithm, type Hasher } from "../native/mod.ts";

export type { HashAlgorithm } from "../native/mod.ts";

export type HashRequest =
  | { id: number; ring: SharedArrayBuffer; algorithms: HashAlgorithm[] }
  | { id: number; offset: number; length: number }
  | { id: number; end: true }
  | { id: number; abort: true };

export type HashReply =
  | { id: number; digests?: undefined }
  | { id: number; digests: Partial<Record<HashAlgorithm, string>> };

interface Job {
  ring: Uint8Array;
  hashes: [HashAlgorithm, Hasher][];
}

const jobs = new Map<number, Job>();

self.onmessage = (event: MessageEvent<HashRequest>) => {
  const message = event.data;
  if ("ring" in message) {
    jobs.set(message.id, {
      ring: new Uint8Array(message.ring),
      hashes: message.algorithms.map((algorithm) => [algorithm, createHasher(algorithm)]),
    });
  } else if ("offset" in message) {
    const job = jobs.get(message.id);
    if (job) {
      const bytes = job.ring.subarray(message.offset, message.offset + message.length);
      for (const [, hash] of job.hashes) hash.update(bytes);
    }
    self.postMessage({ id: message.id } satisfies HashReply);
  } else if ("end" in message) {
    const job = jobs.get(message.id);
    jobs.delete(message.id);
    const digests: Partial<Record<HashAlgorithm, string>> = {};
    for (const [algorithm, hash] of job?.hashes ?? []) digests[algorithm] = hash.hex();
    self.postMessage({ id: message.id, digests } satisfies HashReply);
  } else {
    for (const [, hash] of jobs.get(message.id)?.hashes ?? []) hash.free();
    jobs.delete(message.id);
  }
};
