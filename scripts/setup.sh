#!/usr/bin/env bash
# Installs what svc needs on a fresh Debian/Ubuntu machine with Node and npm: the npm packages
# (Deno itself comes from npm) and xdelta3 for delta compression. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

# Installed packages are judged by the lock file's content, not its age: a fresh checkout (or a
# git worktree sharing node_modules) has a new lock file with the same packages.
# A node_modules that already holds every locked package at its locked version (a superset, as
# when worktrees share one node_modules and one of them adds a package) is kept as it is: npm ci
# would delete it under everyone using it. Its stamp is left alone too, so a checkout whose lock
# matches the stamp keeps matching.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
lock_satisfied() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [path, entry] of Object.entries(lock.packages ?? {})) {
      if (!path || entry.link) continue;
      let version;
      try {
        version = JSON.parse(fs.readFileSync(path + "/package.json", "utf8")).version;
      } catch {
        if (entry.optional) continue; // another platform'"'"'s binary package
        process.exit(1);
      }
      if (version !== entry.version) process.exit(1);
    }' 2>/dev/null
}
installed() {
  [ -x node_modules/.bin/deno ] &&
    { [ "$(cat node_modules/.svc-lock-sha256 2>/dev/null)" = "$lock_sum" ] || lock_satisfied; }
}
if ! installed; then
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

# haproxy: the fleet tests' load balancer (tests/helpers/fleet.ts); they skip without it.
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ] && [ "$(id -u)" = "0" ] &&
  command -v apt-get >/dev/null 2>&1; then
  (apt-get install -y -qq haproxy >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq haproxy >/dev/null 2>&1; }) ||
    echo "setup: could not install haproxy; the fleet tests will be skipped" >&2
fi
