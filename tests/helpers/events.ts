/**
 * Shared parts of the event-delivery black-box suites (tests/events_test.ts,
 * tests/events_delivery_test.ts): a server started with an `advanced.event_delivery` block,
 * plain signed S3 calls, and the outbox as the admin API shows it.
 */
import assert from "node:assert/strict";
import { AdminClient } from "./admin.ts";
import { signedFetch, startSvc, type SvcProcess } from "./svc.ts";
import type { Receiver } from "./webhook-receiver.ts";

export interface RawEvent {
  id: string;
  seq: number;
  kind: string;
  operation: string | null;
  bucket: string;
  key: string;
  size: number;
  etag: string;
  sha256: string | null;
  storage: string;
  principal: string | null;
  source_ip: string | null;
  request_id: string | null;
  time: string;
}

/** Fast delivery settings; `extra` overrides them. */
export function deliveryConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    enabled: true,
    tick_interval: "50ms",
    batch_size: 100,
    request_timeout: "5s",
    retry_base: "50ms",
    retry_max: "200ms",
    stale_claim_after: "60s",
    ...extra,
  };
}

export async function startWithEvents(
  eventDelivery: Record<string, unknown>,
  dataDir?: string,
): Promise<{ svc: SvcProcess; admin: AdminClient; configDir: string }> {
  const configDir = await Deno.makeTempDir({ prefix: "svc-events-conf-" });
  const configFile = `${configDir}/svc.yaml`;
  await Deno.writeTextFile(
    configFile,
    JSON.stringify({ advanced: { event_delivery: eventDelivery } }),
  );
  const svc = await startSvc({ env: { SVC_CONFIG: configFile }, ...(dataDir ? { dataDir } : {}) });
  const admin = new AdminClient(svc.url);
  await admin.login();
  return { svc, admin, configDir };
}

export async function createBucket(svc: SvcProcess, bucket: string) {
  const response = await signedFetch(`${svc.url}/${bucket}`, { method: "PUT" });
  assert.equal(response.status, 200, await response.text());
}

export async function put(svc: SvcProcess, bucket: string, key: string, body: string) {
  const response = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body });
  assert.equal(response.status, 200, await response.text());
  return response.headers.get("x-amz-request-id")!;
}

export async function del(svc: SvcProcess, bucket: string, key: string) {
  const response = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "DELETE" });
  assert.equal(response.status, 204, await response.text());
  return response.headers.get("x-amz-request-id")!;
}

export type Outbox = {
  rows: { id: number; status: string; attempts: number; delivered_targets: number }[];
  counts: Record<string, number>;
  total: number;
};

export function outbox(admin: AdminClient, query = ""): Promise<Outbox> {
  return admin.json<Outbox>("GET", `/event-outbox${query}`);
}

export const eventsOf = (receiver: Receiver, path?: string) =>
  receiver.accepted(path).map((body) => (body as { event: RawEvent }).event);
