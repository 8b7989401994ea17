/**
 * Building blocks of the admin body schemas (valid-body.ts): the field shapes the routes share,
 * each with its message worded as a predicate ("must be a non-empty string") so a refusal reads
 * `Field "bucket" must be a non-empty string`.
 */
import * as v from "valibot";

/** A string with at least one character. */
export function nonEmptyText(description?: string) {
  const message = "must be a non-empty string";
  return v.pipe(
    v.string(message),
    v.nonEmpty(message),
    v.description(description ?? "A non-empty string."),
  );
}

/** Any string (possibly empty). */
export function text(description: string) {
  return v.pipe(v.string("must be a string"), v.description(description));
}

/** true or false. */
export function flag(description: string) {
  return v.pipe(v.boolean("must be true or false"), v.description(description));
}

/** An integer in [min, max]. */
export function integer(min: number, max: number, description: string) {
  const message = `must be an integer from ${min} to ${max}`;
  return v.pipe(
    v.number(message),
    v.integer(message),
    v.minValue(min, message),
    v.maxValue(max, message),
    v.description(description),
  );
}

/** A list of `min` to `max` items of `item`; `noun` words the refusal ("keys", "parts"). */
export function listOf<S extends v.GenericSchema>(
  item: S,
  min: number,
  max: number,
  noun: string,
  description: string,
) {
  const message = min === 0
    ? `must list at most ${max} ${noun}`
    : `must list ${min} to ${max} ${noun}`;
  return v.pipe(
    v.array(item, message),
    v.minLength(min, message),
    v.maxLength(max, message),
    v.description(description),
  );
}

/** One of `options`. */
export function oneOf<const T extends readonly [string, ...string[]]>(
  options: T,
  description: string,
) {
  return v.pipe(
    v.picklist(options, `must be one of ${options.map((o) => `"${o}"`).join(", ")}`),
    v.description(description),
  );
}

/** Any JSON object (its fields are checked elsewhere, e.g. a config merge patch). */
export function anyObject(description: string) {
  return v.pipe(v.record(v.string(), v.unknown(), "must be an object"), v.description(description));
}
