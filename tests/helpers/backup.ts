/** Helpers of the backup black-box tests (tests/backup_test.ts): populate, download, upload. */
import assert from "node:assert/strict";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { unzipSync, zipSync } from "fflate";
import { AdminClient } from "./admin.ts";
import type { SvcProcess } from "./svc.ts";

export const BUCKET = "backup-bucket";
export const OTHER_BUCKET = "backup-other";

export interface User {
  id: string;
  name: string;
  access_key_id: string;
  secret_access_key?: string;
  enabled: boolean;
  groups: string[];
  permissions: unknown[];
}
export interface Group {
  id: string;
  name: string;
  description: string;
  members: string[];
  permissions: unknown[];
}

export function s3As(svc: SvcProcess, user: { access_key_id: string; secret_access_key?: string }) {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: user.access_key_id, secretAccessKey: user.secret_access_key! },
  });
}

export async function loggedIn(svc: SvcProcess): Promise<AdminClient> {
  const admin = new AdminClient(svc.url);
  await admin.login();
  return admin;
}

export async function createBuckets(svc: SvcProcess) {
  const root = svc.client();
  for (const bucket of [BUCKET, OTHER_BUCKET]) {
    const response = await root.send(new CreateBucketCommand({ Bucket: bucket }));
    assert.equal(response.$metadata.httpStatusCode, 200);
  }
}

/** Populates: two groups, three users (one disabled), one membership added via the route. */
export async function populate(admin: AdminClient): Promise<Record<string, User>> {
  const writers = await admin.json<Group>("POST", "/groups", {
    name: "writers",
    description: "may write the backup bucket",
    permissions: [{ effect: "Allow", actions: ["read", "write", "list"], resources: [BUCKET] }],
  }, 201);
  await admin.json("POST", "/groups", { name: "auditors", permissions: [] }, 201);
  const alice = await admin.json<User>("POST", "/users", { name: "alice" }, 201);
  const bob = await admin.json<User>("POST", "/users", {
    name: "bob",
    groups: ["auditors"],
    permissions: [{ actions: ["read", "list"], resources: [`${BUCKET}/shared/*`] }],
  }, 201);
  const carol = await admin.json<User>("POST", "/users", { name: "carol", enabled: false }, 201);
  await admin.json("POST", `/groups/${writers.id}/members`, { user_id: alice.id });
  return { alice, bob, carol };
}

export async function download(admin: AdminClient, headers: Record<string, string> = {}) {
  const response = await admin.request("GET", "/backup", undefined, headers);
  assert.equal(response.status, 200, await response.clone().text());
  return { response, zip: new Uint8Array(await response.arrayBuffer()) };
}

export async function upload(
  admin: AdminClient,
  zip: Uint8Array,
  headers: Record<string, string> = {},
) {
  // AdminClient sends strings only; zips go through fetch directly with the session cookie.
  return await fetch(`${admin.base}/backup`, {
    method: "POST",
    headers: { cookie: admin.cookie!, "content-type": "application/zip", ...headers },
    body: zip as Uint8Array<ArrayBuffer>,
  });
}

/** Users as comparable records (ids and times differ between instances by design). */
export async function usersOf(admin: AdminClient) {
  const { users } = await admin.json<{ users: User[] }>("GET", "/users");
  return users.map(({ name, access_key_id, enabled, groups, permissions }) => ({
    name,
    access_key_id,
    enabled,
    groups,
    permissions,
  }));
}

export async function groupsOf(admin: AdminClient) {
  const { groups } = await admin.json<{ groups: Group[] }>("GET", "/groups");
  return groups.map(({ name, description, members, permissions }) => ({
    name,
    description,
    members,
    permissions,
  }));
}

export function rezip(
  zip: Uint8Array,
  edit: (files: Record<string, Uint8Array>) => void,
): Uint8Array {
  const files = unzipSync(zip);
  edit(files);
  return zipSync(files);
}
