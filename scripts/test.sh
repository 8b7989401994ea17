#!/usr/bin/env bash
# Runs the whole test suite: set-up, format/lint/type gates, unit tests beside the code and the
# black-box tests in tests/. Prints a final plain "N passed, N failed" line and keeps Deno's
# exit code.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export DENO_NO_UPDATE_CHECK=1
deno=node_modules/.bin/deno

gates=0
$deno fmt --check >/dev/null 2>&1 || { echo "deno fmt --check failed (run: $deno fmt)"; gates=1; }
$deno lint || gates=1
$deno check main.ts src tests scripts || gates=1
# The admin UI runs in a browser: type-checked against the DOM library (ui/check.json).
$deno check --config ui/check.json ui/src/main.ts || gates=1
# The structure: no import cycle, rooms import only what scripts/imports/layers.ts allows (and only
# through mod.ts), test support stays out of production, files and folders stay small.
$deno run --allow-read scripts/check-imports.ts || gates=1
# Every SVC_* variable the code reads is in docs/ENVIRONMENT.md, and the file is current.
$deno run --allow-read scripts/env-reference.ts --check || gates=1

# Runs deno test with its arguments; adds its counts to passed/failed and keeps the worst status.
passed=0 failed=0 status=0
run_tests() {
  local log summary code
  log=$(mktemp)
  $deno test --allow-all --parallel "$@" 2>&1 | tee "$log"
  code=${PIPESTATUS[0]}
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(ok|FAILED) \| [0-9]+ passed' | tail -n 1)
  rm -f "$log"
  passed=$((passed + $(echo "${summary:-| 0 passed}" | sed -E 's/.*\| ([0-9]+) passed.*/\1/')))
  if [[ "$summary" == *" failed"* ]]; then
    failed=$((failed + $(echo "$summary" | sed -E 's/.*\| ([0-9]+) failed.*/\1/')))
  elif [ "$code" != 0 ]; then
    failed=$((failed + 1)) # no summary: the run itself broke
  fi
  [ "$code" != 0 ] && status=$code
  return 0
}

run_tests "$@" src tests scripts/imports
# The S3 data-plane suites again, each server on an S3 backend (a second svc) instead of its data
# directory: the same client-visible behaviour must hold whatever stores the objects.
SVC_TEST_BACKEND=svc run_tests "$@" tests/objects_test.ts tests/listing_test.ts \
  tests/conditionals_test.ts tests/copy_test.ts tests/multipart_test.ts \
  tests/multipart_complete_test.ts tests/multipart_extents_test.ts tests/delete_objects_test.ts \
  tests/buckets_test.ts tests/sdk_smoke_test.ts tests/post_object_test.ts tests/auth_presign_test.ts \
  tests/tagging_test.ts tests/listing_nested_test.ts

if [ "$gates" != 0 ]; then
  echo "quality gates failed (fmt, lint or check)"
  failed=$((failed + 1))
  [ "$status" = 0 ] && status=1
fi
echo "$passed passed, $failed failed"
exit "$status"
