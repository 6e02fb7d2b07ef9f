#!/usr/bin/env bash
# Installs code-server (VS Code 1.103.2 on Node 22, server + web workbench, from npm) into its own folder so that
# extension-host tests and UI tests can run in a real VS Code on machines that cannot download VS Code itself.
# See shared ci-notes "A real VS Code". Idempotent: does nothing when the wanted version is already there.
#
#   bash scripts/code-server/install.sh            # installs into <repo>/.cache/code-server
#   CODE_SERVER_DIR=/some/dir bash scripts/...     # elsewhere
#
# Needs: the npm registry and Debian's packages (apt). Runs as root (CI) or with sudo.
set -euo pipefail

CODE_SERVER_VERSION="4.103.2"
RIPGREP_CACHE_VERSION="1.15.14"                                   # @vscode/ripgrep used by code-server 4.103.2
RIPGREP_TARBALL="ripgrep-v13.0.0-13-x86_64-unknown-linux-musl.tar.gz"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dir="${CODE_SERVER_DIR:-$repo/.cache/code-server}"
bin="$dir/node_modules/.bin/code-server"

log() { echo "[code-server install] $*"; }
die() { echo "[code-server install] ERROR: $*" >&2; exit 1; }
trap 'rc=$?; [ $rc -eq 0 ] || echo "[code-server install] FAILED (exit $rc); see the output above" >&2' EXIT

installed_version() {
  [ -x "$bin" ] || return 1
  node -p "require('$dir/node_modules/code-server/package.json').version" 2>/dev/null
}

command -v node >/dev/null || die "node is not on PATH (Node 22 is needed: run through scripts/setup.sh, which puts it first)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' || die "node on PATH is $(node --version); code-server $CODE_SERVER_VERSION (VS Code 1.103) runs on Node 22: run through scripts/setup.sh, which puts it first"
command -v npm >/dev/null || die "npm is not on PATH"

# 1. Debian packages: kerberos headers (a native module of code-server), ripgrep (see 2), chromium (the tests'
#    browser). Only when one is missing, so a warm machine does not touch apt.
apt_pkgs=(libkrb5-dev ripgrep chromium)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "apt packages missing (${missing[*]}) and not root and no sudo"
    sudo="sudo"
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || die "apt-get update failed"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
else
  log "apt packages present: ${apt_pkgs[*]}"
fi
command -v rg >/dev/null || die "rg (ripgrep) not found after apt install"
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium not found after apt install"

# Already installed at this version? Then nothing more to do.
if v="$(installed_version)" && [ "$v" = "$CODE_SERVER_VERSION" ]; then
  log "code-server $CODE_SERVER_VERSION already installed in $dir (nothing to do)"
  exit 0
fi

# Serialise concurrent installs into the same folder (two test runs starting at once).
mkdir -p "$dir"
exec 9>"$dir/.install.lock"
if command -v flock >/dev/null; then flock 9; fi
if v="$(installed_version)" && [ "$v" = "$CODE_SERVER_VERSION" ]; then
  log "code-server $CODE_SERVER_VERSION installed meanwhile by another process in $dir"
  exit 0
fi

# 2. code-server's post-install fetches a ripgrep binary from GitHub, which cannot be reached here.
#    @vscode/ripgrep looks in its cache in os.tmpdir() first: put Debian's rg there as the expected tarball.
tmp="$(node -p "require('os').tmpdir()")"
cache="$tmp/vscode-ripgrep-cache-$RIPGREP_CACHE_VERSION"
if [ ! -s "$cache/$RIPGREP_TARBALL" ]; then
  log "ripgrep: packing $(command -v rg) as $cache/$RIPGREP_TARBALL"
  mkdir -p "$cache"
  stage="$(mktemp -d)"
  cp "$(command -v rg)" "$stage/rg"
  tar -czf "$cache/$RIPGREP_TARBALL" -C "$stage" rg
  rm -rf "$stage"
else
  log "ripgrep: cached tarball present at $cache/$RIPGREP_TARBALL"
fi

# 3. npm install in its own folder (large: ~300 MB, slow: 2-3 min). npm_config_yes: its post-install runs
#    `npx node-gyp` non-interactively; --unsafe-perm: its post-install refuses to run as root otherwise.
if [ -n "${v:-}" ]; then log "found code-server $v in $dir; replacing it with $CODE_SERVER_VERSION"; fi
if [ ! -f "$dir/package.json" ]; then
  printf '{\n  "name": "crawl-studio-code-server",\n  "private": true,\n  "description": "code-server for Crawl Studio tests; made by scripts/code-server/install.sh"\n}\n' >"$dir/package.json"
fi
log "npm install code-server@$CODE_SERVER_VERSION in $dir (takes 2-3 minutes)"
start=$(date +%s)
(
  cd "$dir"
  # An inner npm must not inherit the outer one's environment: `npm test` run by Node 20 sets
  # npm_config_user_agent ("... node/v20 ..."), and code-server's post-install reads the Node version from it
  # and refuses ("requires node v22") although this npm runs on Node 22. Clear every npm_* variable.
  while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(npm_[A-Za-z0-9_]*\)=.*/\1/p')
  npm_config_yes=true npm_config_unsafe_perm=true npm install "code-server@$CODE_SERVER_VERSION" --unsafe-perm --no-audit --no-fund --loglevel=warn
) || die "npm install code-server@$CODE_SERVER_VERSION failed in $dir"

v="$(installed_version)" || die "code-server binary missing at $bin after npm install"
[ "$v" = "$CODE_SERVER_VERSION" ] || die "installed code-server is $v, wanted $CODE_SERVER_VERSION"
"$bin" --version >/dev/null 2>&1 || die "$bin --version failed"
# `--version` prints an advert line of a dependency (i18next) first: take the line that names the Code version.
log "installed code-server $v in $dir in $(( $(date +%s) - start )) s ($("$bin" --version 2>/dev/null | grep -m1 "with Code"))"
