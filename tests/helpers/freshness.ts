/**
 * The freshness rule of the fleet overwrite tests (issue 30): no read may return a body older
 * than the last write acknowledged before the read started, and once quiet every instance answers
 * the newest acknowledged body. Writes and reads are recorded by the tests with their times.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import type { Fleet } from "./fleet.ts";

export interface TimedWrite {
  key: string;
  version: string;
  start: number;
  /** When the PUT's answer arrived (undefined: failed or unanswered). */
  ack?: number;
}

export interface TimedRead {
  key: string;
  method?: "GET" | "HEAD";
  start: number;
  /** Which write the body is (undefined: 404 or an unknown body). */
  version?: string;
  detail: string;
}

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The acknowledged writes of each key. */
export function acknowledgedByKey(writes: Map<string, TimedWrite>): Map<string, TimedWrite[]> {
  const perKey = new Map<string, TimedWrite[]>();
  for (const write of writes.values()) {
    if (write.ack !== undefined) perKey.set(write.key, [...perKey.get(write.key) ?? [], write]);
  }
  return perKey;
}

/** Every read that broke the rule (or answered no known version), described. */
export function staleReads(writes: Map<string, TimedWrite>, reads: TimedRead[]): string[] {
  const perKey = acknowledgedByKey(writes);
  const violations: string[] = [];
  for (const read of reads) {
    if (read.version === undefined) {
      violations.push(`${read.key}: ${read.detail}`);
      continue;
    }
    const got = writes.get(read.version)!;
    // The newest start among writes acknowledged before this read began: any version whose own
    // write was acknowledged before that start is stale.
    let floor = -Infinity;
    let floorVersion = "";
    for (const w of perKey.get(read.key) ?? []) {
      if (w.ack! < read.start && w.start > floor) {
        floor = w.start;
        floorVersion = w.version;
      }
    }
    if (got.ack !== undefined && got.ack < floor) {
      violations.push(
        `${read.key}: ${read.method ?? "GET"} at ${read.start.toFixed(0)} ms got ${got.version} ` +
          `(acked ${got.ack.toFixed(0)}) though ${floorVersion} (started ${floor.toFixed(0)}) ` +
          `was acknowledged before`,
      );
    }
  }
  return violations;
}

/**
 * Once quiet: the keys whose instances answer different bodies, or not the newest acknowledged
 * one (each as "key: what each instance answered").
 */
export async function unsettledKeys(
  fleet: Fleet,
  bucket: string,
  keys: readonly string[],
  writes: Map<string, TimedWrite>,
  bySha: Map<string, string>,
): Promise<string[]> {
  const perKey = acknowledgedByKey(writes);
  const unsettled: string[] = [];
  for (const key of keys) {
    const seen: string[] = [];
    for (let i = 0; i < fleet.instances.length; i++) {
      const s3 = fleet.instanceClient(i);
      try {
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const body = await out.Body!.transformToByteArray();
        seen.push(bySha.get(sha256(body)) ?? `unknown body (${body.length} bytes)`);
      } catch (err) {
        seen.push((err as Error).name);
      } finally {
        s3.destroy();
      }
    }
    const newest = Math.max(...(perKey.get(key) ?? []).map((w) => w.start));
    const fresh = (version: string) => (writes.get(version)?.ack ?? -Infinity) >= newest;
    if (new Set(seen).size !== 1 || !fresh(seen[0])) unsettled.push(`${key}: ${seen.join(", ")}`);
  }
  return unsettled;
}
