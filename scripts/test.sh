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

log=$(mktemp)
$deno test --allow-all --parallel "$@" src tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(ok|FAILED) \| [0-9]+ passed' | tail -n 1)
passed=$(echo "$summary" | sed -E 's/.*\| ([0-9]+) passed.*/\1/')
failed=$(echo "$summary" | sed -E 's/.*\| ([0-9]+) failed.*/\1/')
rm -f "$log"
if [ "$gates" != 0 ]; then
  echo "quality gates failed (fmt, lint or check)"
  failed=$((${failed:-0} + 1))
  [ "$status" = 0 ] && status=1
fi
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
