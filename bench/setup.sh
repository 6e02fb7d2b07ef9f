#!/usr/bin/env bash
# Installs what the benchmark needs and is missing: nginx, wrk, redis-server, PostgreSQL and Scrapy from Debian
# (apt, as root), and the peer crawlers into bench/node_modules (npm ci from bench/package-lock.json), so the
# extension's own dependencies never see them. Safe to run again: it only installs what is absent.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
/usr/bin/python3 -c 'import scrapy' >/dev/null 2>&1 || need+=(python3-scrapy)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench setup: apt-get install ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # Scrapy is optional (the report says when it is missing); the others are required.
    apt-get install -y -qq "${need[@]}" >/dev/null || apt-get install -y -qq $(printf '%s\n' "${need[@]}" | grep -v python3-scrapy) >/dev/null
  else
    echo "bench setup: please install ${need[*]} (Debian/Ubuntu: apt-get install ${need[*]})" >&2
    exit 1
  fi
fi
# Debian starts nginx as a service on install; the benchmark runs its own on a free loopback port.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nginx 2>/dev/null; then systemctl stop nginx || true; fi

if [ ! -d node_modules/crawlee ]; then
  echo "bench setup: npm ci (crawlee into bench/node_modules)" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
