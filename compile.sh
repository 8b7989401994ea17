#!/usr/bin/env bash
# Builds one self-contained executable, ./svc, with `deno compile`. deno compile needs the
# "denort" runtime for the target: it downloads it from Deno's release server, or takes the file
# named by DENORT_BIN. Where neither is available this script stops with a clear message.
#
#   ./compile.sh [output] [--target <rust triple>]   e.g. --target aarch64-unknown-linux-gnu
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
export DENO_NO_UPDATE_CHECK=1
out=svc
target=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target=(--target "$2"); shift 2 ;;
    --target=*) target=(--target "${1#--target=}"); shift ;;
    *) out="$1"; shift ;;
  esac
done
if [ -n "${DENORT_BIN:-}" ] && [ ! -f "$DENORT_BIN" ]; then
  echo "compile.sh: DENORT_BIN=$DENORT_BIN does not exist" >&2
  exit 1
fi
# The commit `svc --version` reports (src/cli/version-info.ts): SVC_BUILD_COMMIT when building
# from an export without .git, else the checkout's HEAD. The file only lives for this build.
build_info=src/cli/build-info.json
commit="${SVC_BUILD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
printf '{"commit":"%s"}\n' "$commit" >"$build_info"
log=$(mktemp)
trap 'rm -f "$log" "$build_info"' EXIT
# Every file svc loads at run time and the static import graph does not reach: worker entry
# points and data files read through import.meta.url. tests/compile_coverage_test.ts scans the
# source for them and fails when one is missing here.
includes=(
  src/body/hash-worker.ts
  src/admin/session/bcrypt-worker.ts
  src/delta/archive/archive-worker.ts
  src/delta/archive/model/model-worker.ts
  src/storage/compression/frame-worker.ts
  src/cli/build-info.json
)
include_args=()
for file in "${includes[@]}"; do include_args+=(--include "$file"); done
if ! node_modules/.bin/deno compile --allow-all --no-check "${include_args[@]}" "${target[@]}" \
  --output "$out" main.ts 2>"$log"; then
  cat "$log" >&2
  if grep -qiE 'denort|download|dns|connect|network|fetch' "$log"; then
    cat >&2 <<MSG

compile.sh: deno compile could not obtain the denort runtime ${target[1]:-for this machine} (it
downloads it from Deno's release server, https://dl.deno.land, which this machine cannot reach).
Put a denort binary matching $(node_modules/.bin/deno --version | head -1) and the target on disk
and run: DENORT_BIN=/path/to/denort ./compile.sh $out ${target[*]}
MSG
  fi
  exit 1
fi
echo "compile.sh: built ./$out"
