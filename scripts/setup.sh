#!/usr/bin/env bash
# Brings a checkout to the point where the mesh runs: Node.js checked, dependencies installed
# from the lock file, nats-server present (installed from the system's packages when we are root),
# and the TypeScript built. Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

# A system package the mesh or its tests need: installed with apt-get when we are root (the
# package lists updated once a run), else `missing` is said with what to do; returns 1 then.
apt_updated=""
install_or_say() {
  local what=$1 missing=$2
  shift 2
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "$what is missing: installing it from the system's packages (apt-get install $*)"
    if [ -z "$apt_updated" ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
  else
    say "$what is missing: $missing"
    return 1
  fi
}

if ! command -v node >/dev/null 2>&1; then
  say "Node.js is not installed. Install Node.js 20 or newer (https://nodejs.org or your system's packages), then run this again."
  exit 1
fi
# `node --version` answers before the JavaScript engine starts: ./mesh runs this at every verb.
version=$(node --version)
major=${version#v}
major=${major%%.*}
if [ "$major" -lt 20 ]; then
  say "Node.js $(node -v) is too old: the mesh needs 20 or newer."
  exit 1
fi

# Dependencies: npm ci when node_modules is missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# nats-server: MESH_NATS_SERVER, then PATH, then /usr/sbin (where Debian puts it).
find_nats() {
  if [ -n "${MESH_NATS_SERVER:-}" ] && [ -x "${MESH_NATS_SERVER}" ]; then echo "$MESH_NATS_SERVER"; return 0; fi
  command -v nats-server 2>/dev/null && return 0
  [ -x /usr/sbin/nats-server ] && { echo /usr/sbin/nats-server; return 0; }
  return 1
}
if ! find_nats >/dev/null; then
  install_or_say nats-server "it cannot be installed from here.
  On Debian or Ubuntu, as root: apt-get install -y nats-server
  Elsewhere: put a nats-server (2.9 or newer) release binary on PATH, or set MESH_NATS_SERVER to its path." nats-server || exit 1
fi

# Chromium: the view's browser test drives it (playwright-core downloads no browser). Without it
# that test fails rather than skips, so it is installed here when we can.
if [ ! -x "${MESH_CHROMIUM:-/usr/bin/chromium}" ]; then
  install_or_say chromium "the view's browser test will fail. As root on Debian or Ubuntu: apt-get install -y chromium; elsewhere set MESH_CHROMIUM to a Chromium binary." chromium || true
fi

# Go and the NATS Go client's sources: the Go build module (mesh-build-go) compiles Go modules
# offline against them, and the Go examples and SDK tests need them. Without them those tests fail
# rather than skip, so they are installed here when we can.
if ! command -v go >/dev/null 2>&1 || [ ! -d "${MESH_GOPATH:-/usr/share/gocode}/src/github.com/nats-io/nats.go" ]; then
  install_or_say "go or the NATS Go client" "Go modules cannot be built. As root on Debian or Ubuntu: apt-get install -y golang-go golang-github-nats-io-go-nats-dev; elsewhere set MESH_GOPATH to a GOPATH holding github.com/nats-io/nats.go." golang-go golang-github-nats-io-go-nats-dev || true
fi

# python3: the Python build module (mesh-build-python) and the Python modules' bridge run it.
if ! command -v python3 >/dev/null 2>&1; then
  install_or_say python3 "Python modules cannot be built or run. As root on Debian or Ubuntu: apt-get install -y python3." python3 || true
fi

# nftables: the fleet's slow, lossy links (decision 0213) drop packets with nft in a node's network
# namespace; the fleet's tests need root, so a root machine gets it here.
if ! command -v nft >/dev/null 2>&1 && [ ! -x /usr/sbin/nft ]; then
  install_or_say nft "a fleet's lossy links cannot be made (npm run fleet -- --loss, the slow-links test). As root on Debian or Ubuntu: apt-get install -y nftables." nftables || true
fi

# Build, unless no source or config changed since the last build (a stamp file says when):
# `./mesh <verb>` runs this every time, and even an incremental tsc takes seconds. `npm run build`
# makes the same outputs and touches the same stamp, so ./mesh does not build again after it.
stamp=node_modules/.mesh-build-stamp
changed=yes
if [ -f "$stamp" ]; then
  changed=$(find packages examples bench tsconfig*.json package.json package-lock.json \
    \( -name node_modules -o -name dist \) -prune -o \
    \( -name '*.ts' -o -name '*.json' -o -name '*.css' -o -name '*.html' \) -newer "$stamp" -print -quit 2>/dev/null)
fi
# The CLI bundle ./mesh runs is made from tsc's output by the same step, so it is never older than
# what it bundles; if it cannot be made, ./mesh runs tsc's output (the folder is gone by then).
if [ -n "$changed" ] || [ ! -f packages/cli/dist/main.js ]; then
  npx --no-install tsc -b >&2
  npx --no-install tsc -p examples >&2
  npx --no-install tsc -p packages/runtime/node-tools >&2
  npx --no-install tsc -p packages/delivery/parts >&2
  # Delivery's parts as the prebuilt archives mesh up registers (decision 0190); skipped when
  # nothing they are made of changed.
  node scripts/parts-bundle.js >&2
  node scripts/cli-bundle.js >&2 || say "the CLI bundle was not made; ./mesh runs packages/cli/dist/main.js"
  touch "$stamp"
elif [ ! -f packages/cli/dist/bundle/mesh.cjs ]; then
  node scripts/cli-bundle.js >&2 || say "the CLI bundle was not made; ./mesh runs packages/cli/dist/main.js"
fi
if [ ! -f packages/cli/dist/shipped-parts/index.json ]; then
  node scripts/parts-bundle.js >&2
fi
