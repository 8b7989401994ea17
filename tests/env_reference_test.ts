// docs/ENVIRONMENT.md against the code (scripts/env-reference.ts): every `SVC_*` variable the
// production code reads is in the reference with a meaning, nothing else is, and the file is
// what the generator writes. The other cases prove the check notices each kind of drift.
import assert from "node:assert/strict";
import {
  backendTemplates,
  REFERENCE_PATH,
  referenceProblems,
  referenceRows,
  renderReference,
  stripComments,
  variablesRead,
} from "../scripts/env-reference.ts";
import { ENV_NOTES } from "../scripts/env-reference-notes.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

Deno.test("env reference: docs/ENVIRONMENT.md is current and complete", async () => {
  const read = await variablesRead(root);
  const text = await Deno.readTextFile(`${root}/${REFERENCE_PATH}`);
  assert.deepEqual(referenceProblems(read, text), []);
  for (const name of read) assert(text.includes(`\`${name}\``), `${name} missing from the file`);
});

Deno.test("env reference: the scan finds direct reads, property reads and backend templates", async () => {
  const read = await variablesRead(root);
  // Read with Deno.env.get, through `env.SVC_…`, from a jobs settings object, and per backend.
  for (const name of ["SVC_ACCESS_LOG", "SVC_CONFIG", "SVC_MAINTENANCE_PACE_MS"]) {
    assert(read.includes(name), `${name} not found`);
  }
  assert.deepEqual(backendTemplates().sort(), [
    "SVC_BACKEND_<NAME>_ENCRYPTION_KEY",
    "SVC_BACKEND_<NAME>_SSE_KMS_KEY_ID",
  ]);
  assert(read.includes("SVC_BACKEND_<NAME>_ENCRYPTION_KEY"));
});

Deno.test("env reference: comments do not count as reads, strings do", () => {
  const code = stripComments(
    '// SVC_IN_LINE_COMMENT\n/* SVC_IN_BLOCK */ const a = "SVC_IN_STRING"; // x\n' +
      "const b = `SVC_IN_TEMPLATE // not a comment`;",
  );
  assert(!code.includes("SVC_IN_LINE_COMMENT"));
  assert(!code.includes("SVC_IN_BLOCK"));
  assert(code.includes('"SVC_IN_STRING"'));
  assert(code.includes("SVC_IN_TEMPLATE // not a comment"));
});

Deno.test("env reference: a read variable without a note is a problem", async () => {
  const read = [...await variablesRead(root), "SVC_NEW_KNOB"].sort();
  const problems = referenceRows(read).problems;
  assert.deepEqual(problems.length, 1);
  assert(problems[0].startsWith("SVC_NEW_KNOB is read by the code but has no note"), problems[0]);
});

Deno.test("env reference: a note for a variable the code no longer reads is a problem", async () => {
  const read = (await variablesRead(root)).filter((name) => name !== "SVC_ACCESS_LOG");
  const problems = referenceRows(read, ENV_NOTES).problems;
  assert.deepEqual(problems, [
    "SVC_ACCESS_LOG has a note but the code does not read it (remove the note)",
  ]);
});

Deno.test("env reference: a stale or missing file is a problem, reformatting is not", async () => {
  const read = await variablesRead(root);
  const fresh = renderReference(referenceRows(read).rows);
  assert.deepEqual(referenceProblems(read, fresh), []);
  const rewrapped = fresh.replace(
    "Every `SVC_*` variable svc reads.",
    "Every `SVC_*`\nvariable svc reads.",
  )
    .replaceAll(" | ", "   |   ");
  assert.deepEqual(referenceProblems(read, rewrapped), []);
  const edited = fresh.replace("| 1024 |", "| 2048 |");
  assert(edited !== fresh);
  assert.deepEqual(referenceProblems(read, edited).length, 1);
  assert.deepEqual(referenceProblems(read, null), [`${REFERENCE_PATH} does not exist`]);
});

Deno.test("env reference: every variable of README's short table is one the code reads", async () => {
  const read = new Set(await variablesRead(root));
  const readme = await Deno.readTextFile(`${root}/README.md`);
  const rows = readme.split("\n").filter((line) => line.startsWith("| `SVC_"));
  assert.ok(rows.length > 10, "README's environment table not found");
  for (const row of rows) {
    const names = row.split("|")[1].match(/SVC_[A-Z0-9_]+/g) ?? [];
    for (const name of names) {
      assert.ok(read.has(name), `README names ${name}, not read by the code`);
    }
  }
  assert.ok(readme.includes("(docs/ENVIRONMENT.md)"), "README does not link the reference");
});
