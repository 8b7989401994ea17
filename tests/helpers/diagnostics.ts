/**
 * Shared by the diagnostics suites: a compressed bucket filled with artifact versions (deltas
 * against a baseline), an incompressible artifact, a text file, and a second deltaspace; plus
 * polling of the integrity scan's status.
 */
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { AdminClient } from "./admin.ts";
import { randomBytes } from "./svc.ts";
import { mutate } from "./tar.ts";

export interface Written {
  key: string;
  body: Uint8Array;
}

export async function fillBucket(s3: S3Client, bucket: string): Promise<Written[]> {
  const base = randomBytes(150_000);
  const v2 = mutate(base);
  const written: Written[] = [
    { key: "app/v1.zip", body: base },
    { key: "app/v2.zip", body: v2 },
    { key: "app/v3.zip", body: mutate(v2) },
    { key: "app/noise.zip", body: randomBytes(150_000) }, // ratio exceeded: passthrough
    { key: "docs/readme.txt", body: new TextEncoder().encode("read me ".repeat(5000)) },
    { key: "lib/x.jar", body: randomBytes(60_000) },
    { key: "m/a.tar", body: randomBytes(40_000) },
  ];
  for (const { key, body } of written) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  }
  return written;
}

export type ScanStatus = Record<string, unknown> & {
  state: string;
  running: boolean;
  resumes: number;
  totals: Record<string, number>;
  findings: { bucket: string; key: string; stored_name: string; kind: string; detail: string }[];
};

/** Polls the scan status until `until` holds. */
export async function waitForScan(
  admin: AdminClient,
  until: (status: ScanStatus) => boolean,
  timeoutMs = 60_000,
  query = "",
): Promise<ScanStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await admin.json<ScanStatus>("GET", `/diagnostics/scan/status${query}`);
    if (until(status)) return status;
    if (Date.now() > deadline) {
      throw new Error(`Scan status never matched: ${JSON.stringify(status)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
