/**
 * Bodies of the session and ops routes, written here for the document only: those routes check
 * their bodies by hand (src/admin/session/, src/admin/ops/). Moving a route to valid-body.ts
 * means moving its schema next to it and pointing the row there.
 */
import * as v from "valibot";
import { flag, listOf, nonEmptyText, text } from "../body-fields.ts";

/** `POST /login`, `POST /recover-db`. */
export const passwordBody = v.strictObject({
  password: nonEmptyText("The bootstrap password."),
});

/** `PUT /password`. */
export const passwordChangeBody = v.strictObject({
  current_password: nonEmptyText("The password in use."),
  new_password: nonEmptyText("The new one: at least 12 characters."),
});

/** `POST /login-as`, `POST /session/browser-connect`, `PUT /session/s3-credentials`. */
export const keyPairBody = v.strictObject({
  access_key_id: nonEmptyText("The IAM user's access key id."),
  secret_access_key: nonEmptyText("Its secret (kept in memory for the session only)."),
});

/** `POST /migrate`. */
export const migrateBody = v.strictObject({
  name: v.optional(text('The IAM user the bootstrap pair becomes (default "admin").')),
});

/** `POST /jobs/reencrypt`. */
export const reencryptBody = v.strictObject({
  buckets: listOf(text("A bucket."), 1, 100, "buckets", "The buckets to re-encrypt."),
});

/** `POST /buckets/:bucket/migrate`. */
export const bucketMigrateBody = v.strictObject({
  target_backend: nonEmptyText("The backend the bucket moves to."),
  delete_source: v.optional(flag("Delete the source objects once copied (default false).")),
});
