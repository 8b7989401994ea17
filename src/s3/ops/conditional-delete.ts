/**
 * DeleteObject with `If-Match` (as AWS S3 answers it): the object is removed only while its ETag
 * is one the header names, checked and removed under the key lock (ObjectService.deleteIf), so a
 * write that lands in between is never removed. 412 PreconditionFailed when another version is
 * there, 404 NoSuchKey when none is. Several svc instances over a svc backend rely on it to
 * garbage-collect a key's other stored name (docs/DELTA.md "Several instances over one backend").
 */

import { SvcError } from "../../lib/mod.ts";
import type { ObjectService } from "../../objects/mod.ts";
import { etagListMatches } from "../conditionals.ts";
import { writeContextOf } from "../request.ts";
import type { ObjectRequest } from "../routes/route-types.ts";

export async function deleteObjectIfMatch(
  objects: ObjectService,
  request: ObjectRequest,
  ifMatch: string,
): Promise<Response> {
  let refused = false;
  const deleted = await objects.deleteIf(
    request.bucket,
    request.key,
    (current) => {
      refused = !etagListMatches(ifMatch, current.meta.etag);
      return !refused;
    },
    writeContextOf(request, "delete"),
  );
  if (deleted) return new Response(null, { status: 204 });
  if (refused) {
    throw new SvcError(
      "PreconditionFailed",
      `Delete of "${request.key}" refused: If-Match "${ifMatch}" did not hold`,
      { Condition: "If-Match" },
    );
  }
  throw new SvcError("NoSuchKey", `The specified key "${request.key}" does not exist`, {
    Key: request.key,
  });
}
