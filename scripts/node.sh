#!/usr/bin/env bash
# Runs Node >= 22.13 with the given arguments, with its folder first on PATH so that everything it starts (npx
# mocha, the CLI's workers, code-server and its extension host) runs on the same Node.
#
# Why 22.13: Crawl Studio's embedded store is node:sqlite (SQLite with standard file locking and WAL, safe to open
# in other SQLite tools during a crawl), built into Node from 22.13 and into VS Code >= 1.101's extension host.
# The `node` on PATH is used when it is new enough; otherwise the one scripts/setup.sh installed into .cache/node.
#
#   bash scripts/node.sh dist/cli.js run examples/books.crawl.yaml
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$("$repo/scripts/node22.sh")"
export PATH="$bin:$PATH"
exec "$bin/node" "$@"
