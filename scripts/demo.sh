#!/usr/bin/env bash
# The whole director story on this machine, with nothing outside it:
# a demo site on 127.0.0.1, a real headless Chromium, the default local store
# and SQLite catalog in a throw-away home.
#
#   bash scripts/demo.sh [path/to/director]
set -euo pipefail
cd "$(dirname "$0")/.."
DIRECTOR=${1:-bin/director}
[ -x "$DIRECTOR" ] || go build -o "$DIRECTOR" ./cmd/director
DIRECTOR=$(cd "$(dirname "$DIRECTOR")" && pwd)/$(basename "$DIRECTOR")

work=$(mktemp -d "${TMPDIR:-/tmp}/director-demo.XXXXXX")
export DIRECTOR_HOME="$work/home"
site_pid=""
cleanup() {
  [ -n "$site_pid" ] && kill "$site_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
d() { printf '$ director %s\n' "$*"; "$DIRECTOR" "$@"; }

step "Start a demo site on 127.0.0.1 (login form, cookies, localStorage, IndexedDB)"
go build -o "$work/demosite" ./internal/testsite/cmd/demosite
"$work/demosite" -addr 127.0.0.1:0 -url-file "$work/url" >/dev/null 2>"$work/site.log" &
site_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
SITE=$(cat "$work/url")
echo "demo site: $SITE (user alice, password secret)"
export DEMO_SITE="$SITE"

step "Create a profile"
d profile create demo

step "Log in once with a real Chromium, and snapshot because the login check passed"
d run scripts/demo/login.yaml

step "The catalog and the store now hold a snapshot"
d profile snapshots demo
d profile verify demo latest

step "Wipe the profile"
d profile delete demo
ls "$DIRECTOR_HOME/browser-profiles"

step "Restore it from the latest snapshot"
d profile restore demo latest

step "Run a workflow on the restored profile: still logged in, storage intact, no password typed"
d run scripts/demo/check.yaml

step "Open the archive with plain tar"
archive=$(ls "$DIRECTOR_HOME"/snapshots/demo/*.tar.zst | head -1)
echo "\$ tar --zstd -tf $(basename "$archive") | head"
tar --zstd -tf "$archive" | sed -n 1,8p

step "The audit log of those sessions"
d audit --limit 8

printf '\n\033[1mDone.\033[0m The demo home (%s) is removed on exit.\n' "$DIRECTOR_HOME"
