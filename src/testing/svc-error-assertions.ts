// Assertions that a call fails with a given SvcError code, shared by the unit tests.
import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";

/** `work` rejects with an SvcError of `code` (and, if given, a message matching or containing). */
export async function rejectsWith(
  work: Promise<unknown>,
  code: string,
  message?: RegExp | string,
): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof SvcError, `expected SvcError ${code}, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (typeof message === "string") assert.ok(err.message.includes(message), err.message);
    else if (message) assert.match(err.message, message);
    return true;
  });
}

/** `fn` throws an SvcError of `code`; returns it for further checks. */
export function throwsWith(fn: () => unknown, code: string): SvcError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof SvcError, `expected ${code}, nothing or something else was thrown`);
  assert.equal(caught.code, code);
  return caught;
}
