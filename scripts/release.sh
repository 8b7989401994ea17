#!/usr/bin/env bash
# Lays out a release of svc, per target:
#
#   dist/svc-<version>-<target>/svc                      the binary (deno compile, ./compile.sh)
#                              /LICENSE                  Apache-2.0
#                              /THIRD_PARTY_NOTICES.txt  every bundled dependency's license
#                              /svc.example.yaml
#                              /svc.service              systemd unit (packaging/)
#                              /README.md
#   dist/svc-<version>-<target>.tar.gz
#   dist/SHA256SUMS                                      of the tarballs and the binaries
#
#   scripts/release.sh [--targets x86_64-unknown-linux-gnu,aarch64-unknown-linux-gnu] [--out dist]
#
# Compiling needs Deno's "denort" runtime for each target, which deno compile downloads from
# https://dl.deno.land; where that is unreachable, give the files: DENORT_DIR=<dir> holding
# denort-<target> (one per target), or DENORT_BIN for a single target. Without them the script
# stops with a clear message and leaves no partial release. The binary built for this machine's
# target goes through scripts/release/smoke.ts (start, first-run password, admin login, S3
# PUT/GET of a delta, console page) before anything is packed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DENO_NO_UPDATE_CHECK=1
deno=node_modules/.bin/deno

targets="x86_64-unknown-linux-gnu,aarch64-unknown-linux-gnu"
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --targets) targets="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
  esac
done

version=$("$deno" eval 'import { VERSION } from "./src/lib/mod.ts"; console.log(VERSION)')
case "$(uname -m)" in
  x86_64) host=x86_64-unknown-linux-gnu ;;
  aarch64|arm64) host=aarch64-unknown-linux-gnu ;;
  *) host=unknown ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$deno" run -A scripts/release/third-party-notices.ts "$work/THIRD_PARTY_NOTICES.txt" >/dev/null

IFS=',' read -r -a target_list <<<"$targets"
for target in "${target_list[@]}"; do
  case "$target" in
    x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
    *) echo "release.sh: target \"$target\" is not supported (linux x86_64 and arm64, glibc)" >&2; exit 2 ;;
  esac
  name="svc-$version-$target"
  stage="$work/$name"
  mkdir -p "$stage"
  denort=()
  if [ -n "${DENORT_DIR:-}" ]; then
    [ -f "$DENORT_DIR/denort-$target" ] || {
      echo "release.sh: DENORT_DIR=$DENORT_DIR holds no denort-$target" >&2
      exit 1
    }
    denort=(env "DENORT_BIN=$DENORT_DIR/denort-$target")
  fi
  echo "release.sh: building $name" >&2
  if ! "${denort[@]}" ./compile.sh "$stage/svc" --target "$target"; then
    echo "release.sh: could not build the $target binary (see above); no release written" >&2
    exit 1
  fi
  if [ "$target" = "$host" ]; then
    "$deno" run -A scripts/release/smoke.ts --binary "$stage/svc"
  else
    echo "release.sh: $target is not this machine's target; its binary is not smoke-tested here" >&2
  fi
  cp LICENSE svc.example.yaml README.md "$stage/"
  cp packaging/svc.service "$stage/"
  cp "$work/THIRD_PARTY_NOTICES.txt" "$stage/"
  tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$work/$name.tar.gz" "$name"
done

# Everything built: only now replace what the output directory held.
mkdir -p "$out"
for target in "${target_list[@]}"; do
  name="svc-$version-$target"
  rm -rf "${out:?}/$name" "$out/$name.tar.gz"
  mv "$work/$name" "$work/$name.tar.gz" "$out/"
done
(
  cd "$out"
  sha256sum svc-"$version"-*.tar.gz svc-"$version"-*/svc >SHA256SUMS
)
echo "release.sh: wrote $out/ ($(wc -l <"$out/SHA256SUMS") checksums in $out/SHA256SUMS)" >&2
