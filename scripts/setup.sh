#!/usr/bin/env bash
# Installs what svc needs on a fresh Debian/Ubuntu machine with Node and npm: the npm packages
# (Deno itself comes from npm) and xdelta3 for delta compression. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

# Installed packages are judged by the lock file's content, not its age: a fresh checkout (or a
# git worktree sharing node_modules) has a new lock file with the same packages.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -x node_modules/.bin/deno ] || [ "$(cat node_modules/.svc-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
  echo "setup: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$lock_sum" >node_modules/.svc-lock-sha256
fi

if ! command -v xdelta3 >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing xdelta3 (apt-get)" >&2
    (apt-get install -y -qq xdelta3 >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq xdelta3 >/dev/null 2>&1; }) ||
      echo "setup: could not install xdelta3; delta compression will store objects as-is" >&2
  else
    echo "setup: xdelta3 is not installed (sudo apt-get install xdelta3); delta compression will store objects as-is" >&2
  fi
fi
