#!/usr/bin/env bash
# Installs what Crawl Studio needs on this machine, idempotently: `demo` (Node packages, redis-server) or `test`
# (also PostgreSQL, Chromium, Prometheus, and code-server for the VS Code tests). System packages are installed with apt when
# running as root on Debian/Ubuntu; elsewhere the script says what to install and stops.
set -euo pipefail
mode="${1:-demo}"
# `test --code-server-later`: everything but code-server, which `npm test` (scripts/test.mjs) installs beside its first
# stages, since only the extension and UI stages need it (a minute of npm install off a fresh machine's suite).
code_server_later="${2:-}"
cd "$(dirname "$0")/.."

missing=()
have() { command -v "$1" >/dev/null 2>&1; }

if [ "$mode" = demo ] && [ -n "${CRAWL_STUDIO_REDIS:-}" ]; then
  :  # the demo will use the given Redis URL
elif ! have redis-server; then
  missing+=(redis-server)
fi
if [ "$mode" = test ]; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  have chromium || missing+=(chromium)
  have rg || missing+=(ripgrep)
  have sqlite3 || missing+=(sqlite3)  # the tests open the store with the sqlite3 shell during crawls
  have prometheus || missing+=(prometheus)  # the monitor's /metrics is scraped by a real Prometheus
  [ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || missing+=(libkrb5-dev)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && have apt-get; then
    echo "setup: installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing ${missing[*]}." >&2
    echo "  Debian/Ubuntu: sudo apt-get install ${missing[*]}" >&2
    echo "  macOS: brew install redis postgresql chromium ripgrep" >&2
    if [ "$mode" = demo ]; then
      echo "  Or point the demo at a running Redis: CRAWL_STUDIO_REDIS=redis://host:6379 npm run demo" >&2
    fi
    exit 1
  fi
fi

# Node packages: reinstall when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi

# Node >= 22.13 (node:sqlite, the embedded store): the one on PATH, or one installed into .cache/node.
node_bin="$(bash scripts/node22.sh)"
echo "setup: Node $("$node_bin/node" --version) in $node_bin (scripts/node.sh runs it)"

if [ "$mode" = test ] && [ "$code_server_later" != --code-server-later ]; then
  PATH="$node_bin:$PATH" bash scripts/code-server/install.sh
fi
