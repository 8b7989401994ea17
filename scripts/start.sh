#!/usr/bin/env bash
# Starts svc for a first run: installs what is missing, then serves ./data on 0.0.0.0:9000.
# Without any configuration it creates random development credentials once, keeps them in
# ./data/.svc/dev-credentials (mode 600) and prints them at every start.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DENO_NO_UPDATE_CHECK=1

configured=0
for arg in "$@"; do case "$arg" in --config|--config=*|-c) configured=1 ;; esac; done
[ -n "${SVC_CONFIG:-}" ] || [ -f svc.yaml ] || [ -f svc.yml ] || [ -f /etc/svc/config.yaml ] ||
  [ -f /etc/svc/config.yml ] || [ -n "${SVC_ACCESS_KEY_ID:-}" ] || [ -n "${SVC_AUTHENTICATION:-}" ] ||
  [ "$configured" = 1 ] || {
  data="${SVC_DATA_DIR:-./data}"
  creds="$data/.svc/dev-credentials"
  if [ ! -f "$creds" ]; then
    mkdir -p "$data/.svc"
    umask 077
    key="SVC$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F | head -c 17)"
    secret="$(head -c 30 /dev/urandom | base64 | tr -d '/+=\n' | head -c 40)"
    printf 'SVC_ACCESS_KEY_ID=%s\nSVC_SECRET_ACCESS_KEY=%s\n' "$key" "$secret" >"$creds"
  fi
  set -a
  # shellcheck disable=SC1090
  . "$creds"
  set +a
  cat >&2 <<MSG
svc development credentials (kept in $creds):
  AWS_ACCESS_KEY_ID=$SVC_ACCESS_KEY_ID
  AWS_SECRET_ACCESS_KEY=$SVC_SECRET_ACCESS_KEY
  endpoint: http://127.0.0.1:9000 unless --listen / SVC_LISTEN_ADDR say otherwise
  (path-style addressing, region us-east-1)
MSG
}
exec node_modules/.bin/deno run --allow-all main.ts "$@"
