#!/usr/bin/env bash
# Builds one self-contained executable, ./svc, with `deno compile`. deno compile needs the
# "denort" runtime for the target: it downloads it from Deno's release server, or takes the file
# named by DENORT_BIN. Where neither is available this script stops with a clear message.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
export DENO_NO_UPDATE_CHECK=1
out="${1:-svc}"
if [ -n "${DENORT_BIN:-}" ] && [ ! -f "$DENORT_BIN" ]; then
  echo "compile.sh: DENORT_BIN=$DENORT_BIN does not exist" >&2
  exit 1
fi
log=$(mktemp)
if ! node_modules/.bin/deno compile --allow-all --no-check --include src/body/hash-worker.ts --include src/admin/session/bcrypt-worker.ts \
  --include src/delta/archive/archive-worker.ts \
  --output "$out" main.ts 2>"$log"; then
  cat "$log" >&2
  if grep -qiE 'denort|download|dns|connect|network|fetch' "$log"; then
    cat >&2 <<MSG

compile.sh: deno compile could not obtain the denort runtime (it downloads it from Deno's
release server, which this machine cannot reach). Put a denort binary matching
$(node_modules/.bin/deno --version | head -1) on disk and run: DENORT_BIN=/path/to/denort ./compile.sh
MSG
  fi
  rm -f "$log"
  exit 1
fi
rm -f "$log"
echo "compile.sh: built ./$out"
