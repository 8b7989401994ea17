/**
 * The request bodies of the diagnostics routes, as valibot schemas: the routes check bodies with
 * them (valid-body.ts) and the OpenAPI document shows them (src/admin/openapi/). Counts accept a
 * number or its digits as text (the same rule as the query parameters); empty or null means the
 * default.
 */
import * as v from "valibot";
import { flag, text } from "../body-fields.ts";

function count(min: number, description: string) {
  const message = `must be an integer of at least ${min}`;
  return v.nullish(
    v.pipe(
      v.union([
        v.pipe(v.number(), v.integer(message), v.minValue(min, message)),
        v.pipe(v.string(), v.regex(/^\d*$/, message)),
      ], message),
      v.description(description),
    ),
  );
}

const bucket = v.nullish(text("One bucket (absent or empty: every bucket)."));

/** `POST /diagnostics/delta-efficiency/scan`. */
export const efficiencyScanBody = v.strictObject({
  bucket,
  limit: count(1, "Deltaspaces listed per bucket (default 100, at most 1000)."),
});

/** `POST /diagnostics/delta-efficiency/verify`. */
export const verifyBody = v.strictObject({
  bucket,
  limit: count(1, "Deltas rebuilt and checked (default 20, at most 1000)."),
  sample: v.optional(flag("Pick the deltas at random (default: the first ones).")),
});

/** `POST /diagnostics/scan/start`. */
export const scanStartBody = v.strictObject({
  bucket,
  bytes_per_sec: count(0, "Read rate in bytes per second (0: unthrottled; default: the config's)."),
});
