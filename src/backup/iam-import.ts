/**
 * Restoring IAM records from a backup in ONE write transaction (nothing, or all of it):
 *
 * - a group is created unless a group of that name exists (then skipped, left as it is);
 * - a user is created unless a user of that name exists (skipped), or its access key id belongs
 *   to another user (skipped and reported: two users must never share a key);
 * - a created user gets the memberships the backup lists, by group name (groups imported now or
 *   already present). Existing users are never changed: an import does not widen the grants of
 *   someone who was not in the backup's instance. A group the backup names that exists nowhere
 *   refuses the whole import (the transaction rolls back).
 *
 * New rows get new ids (ids are per instance; names are the identity). `meta.iam_version` moves
 * only when something was created, so re-importing the same backup leaves the index version alone.
 */
import type { Transaction } from "@libsql/client";
import { bumpVersion, type DbClient, insertGroupRow, insertUserRow, one } from "../db/mod.ts";
import { IamError } from "../iam/mod.ts";
import type { IamImport } from "../backup/backup-parts.ts";

export interface SkippedUser {
  name: string;
  reason: "name_exists" | "access_key_in_use";
  /** For `access_key_in_use`: the user holding the key on this instance. */
  held_by?: string;
}

export interface IamImportCounts {
  users_created: number;
  users_skipped: number;
  groups_created: number;
  groups_skipped: number;
  memberships_created: number;
  external_identities_created: number;
  external_identities_skipped: number;
  /** Why each skipped user was skipped. */
  skipped_users: SkippedUser[];
}

async function insertGroups(
  tx: Transaction,
  plan: IamImport,
  now: number,
  counts: IamImportCounts,
): Promise<void> {
  for (const group of plan.groups) {
    if (await one(tx, "SELECT 1 FROM iam_groups WHERE name = ?", [group.name])) {
      counts.groups_skipped++;
      continue;
    }
    await insertGroupRow(tx, group, now);
    counts.groups_created++;
  }
}

async function insertUsers(
  tx: Transaction,
  plan: IamImport,
  now: number,
  counts: IamImportCounts,
): Promise<void> {
  for (const user of plan.users) {
    if (await one(tx, "SELECT 1 FROM iam_users WHERE name = ?", [user.name])) {
      counts.users_skipped++;
      counts.skipped_users.push({ name: user.name, reason: "name_exists" });
      continue;
    }
    const holder = await one(tx, "SELECT name FROM iam_users WHERE access_key_id = ?", [
      user.access_key_id,
    ]);
    if (holder) {
      counts.users_skipped++;
      counts.skipped_users.push({
        name: user.name,
        reason: "access_key_in_use",
        held_by: String(holder.name),
      });
      continue;
    }
    const id = crypto.randomUUID();
    await insertUserRow(tx, { ...user, id }, now);
    counts.users_created++;
    for (const groupName of user.groups) {
      const group = await one(tx, "SELECT id FROM iam_groups WHERE name = ?", [groupName]);
      if (!group) {
        throw new IamError(
          "invalid",
          `User "${user.name}" is a member of group "${groupName}", which is neither in the ` +
            "backup nor on this instance",
        );
      }
      const inserted = await tx.execute({
        sql: "INSERT OR IGNORE INTO iam_memberships (group_id, user_id) VALUES (?, ?)",
        args: [String(group.id), id],
      });
      counts.memberships_created += inserted.rowsAffected;
    }
  }
}

/** Imports `plan` in one transaction; throws IamError (nothing changed) on a refusal. */
export function importIam(
  db: DbClient,
  plan: IamImport,
  now: () => number = Date.now,
): Promise<IamImportCounts> {
  return db.transaction(async (tx) => {
    const counts: IamImportCounts = {
      users_created: 0,
      users_skipped: 0,
      groups_created: 0,
      groups_skipped: 0,
      memberships_created: 0,
      external_identities_created: 0,
      external_identities_skipped: plan.externalIdentities,
      skipped_users: [],
    };
    const time = now();
    await insertGroups(tx, plan, time, counts);
    await insertUsers(tx, plan, time, counts);
    if (counts.users_created + counts.groups_created > 0) await bumpVersion(tx);
    return counts;
  });
}
