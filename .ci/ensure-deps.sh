#!/usr/bin/env bash
# Installs what Sluice needs on a fresh Debian/Ubuntu machine, and nothing when it is there:
# the npm dependencies (which bring Node 24 for the npm scripts) and Debian's clickhouse-server.
# Run by `npm start` and `npm test` (pre-scripts) and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x node_modules/.bin/node ] || [ ! -d node_modules/@clickhouse/client ]; then
  echo "sluice: installing npm dependencies (npm ci)..." >&2
  npm ci --no-audit --no-fund >&2
fi

# .taprc switches tap's own TypeScript loader off (Node 24 runs the sources); tap's installed
# build still has it until `tap build` runs, and its loader cannot run with TypeScript 7.
tap_built=node_modules/@tapjs/test/test-built/dist/esm/index.js
if [ -f "$tap_built" ] && grep -q "@tapjs/typescript" "$tap_built"; then
  echo "sluice: rebuilding tap without its TypeScript loader (tap build)..." >&2
  PATH="$PWD/node_modules/.bin:$PATH" tap build >&2
fi

if [ -z "${CLICKHOUSE_URL:-}" ] && ! command -v clickhouse-server >/dev/null 2>&1 \
   && [ ! -x /usr/sbin/clickhouse-server ] && ! command -v clickhouse >/dev/null 2>&1; then
  echo "sluice: installing clickhouse-server with apt-get (Sluice runs its own local ClickHouse)..." >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "sluice: cannot install clickhouse-server without root. Run: apt-get install -y clickhouse-server" >&2
      echo "        or set CLICKHOUSE_URL to an existing ClickHouse server." >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq clickhouse-server >/dev/null
fi
