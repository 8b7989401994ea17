import assert from "node:assert/strict";
import { flagList, flagNumber, flagString, GLOBAL_FLAGS, parseArgs } from "./args.ts";
import { ADMIN_EXIT, AdminCliError } from "./exit-codes.ts";

const SPEC = { ...GLOBAL_FLAGS, group: "list", follow: "boolean", limit: "string" } as const;

function usage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AdminCliError);
    assert.equal(err.exitCode, ADMIN_EXIT.usage);
    return err.message;
  }
  assert.fail("expected a usage error");
}

Deno.test("parseArgs: positionals, both value forms, booleans, lists, help, --", () => {
  const parsed = parseArgs(
    ["alice", "--group", "a", "--group=b", "--json", "--server=http://x", "-h", "--", "--raw"],
    SPEC,
  );
  assert.deepEqual(parsed.positionals, ["alice", "--raw"]);
  assert.equal(parsed.help, true);
  assert.deepEqual(flagList(parsed, "group"), ["a", "b"]);
  assert.equal(flagString(parsed, "server"), "http://x");
  assert.equal(parsed.flags.json, true);
  assert.equal(flagString(parsed, "limit"), undefined);
  assert.deepEqual(flagList(parsed, "limit"), []);
});

Deno.test("parseArgs: usage errors name the argument", () => {
  assert.match(usage(() => parseArgs(["--bogus"], SPEC)), /Unknown option "--bogus"/);
  assert.match(usage(() => parseArgs(["-x"], SPEC)), /Unknown option "-x"/);
  assert.match(usage(() => parseArgs(["--limit"], SPEC)), /--limit needs a value/);
  assert.match(usage(() => parseArgs(["--limit="], SPEC)), /--limit needs a value/);
  assert.match(usage(() => parseArgs(["--json=yes"], SPEC)), /--json takes no value/);
  // A name inherited from Object.prototype is not a flag.
  assert.match(usage(() => parseArgs(["--constructor"], SPEC)), /Unknown option/);
});

Deno.test("flagNumber: positive numbers or the fallback", () => {
  assert.equal(flagNumber(parseArgs([], SPEC), "limit", 7), 7);
  assert.equal(flagNumber(parseArgs(["--limit", "2.5"], SPEC), "limit", 7), 2.5);
  for (const bad of ["0", "-1", "x"]) {
    assert.match(
      usage(() => flagNumber(parseArgs([`--limit=${bad}`], SPEC), "limit", 7)),
      /--limit must be a positive number/,
    );
  }
});
