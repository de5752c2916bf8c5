#!/usr/bin/env bash
# Installs what Sluice needs on a fresh Debian/Ubuntu machine, and nothing when it is there:
# the npm dependencies (which bring Node 24 for the npm scripts) and Debian's clickhouse-server;
# or, when CLICKHOUSE_URL starts with chdb: (or SLUICE_TEST_ENGINE=chdb), the embedded engine
# (chdb, about 550 MB) into engines/chdb instead of the server.
# Run by `npm start`, `npm test` and `npm run test:chdb` (pre-scripts) and by CI.
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

# The embedded engine: pinned by engines/chdb/package-lock.json, installed beside Sluice and not in
# its node_modules, so that a plain `npm ci` does not download it (lib/storage/chdb-engine.ts).
# `npm install --no-save` rather than `npm ci`: the lockfile holds the one platform package of the
# machine that wrote it, which `npm ci` refuses on another platform.
if [[ "${CLICKHOUSE_URL:-}" == chdb:* || "${SLUICE_TEST_ENGINE:-}" == chdb ]]; then
  chdb_pinned=$(sed -n 's/.*"chdb": "\(.*\)".*/\1/p' engines/chdb/package.json)
  if ! grep -q "\"version\": \"$chdb_pinned\"" engines/chdb/node_modules/chdb/package.json 2>/dev/null; then
    echo "sluice: installing the embedded ClickHouse engine (chdb $chdb_pinned, about 550 MB) into engines/chdb..." >&2
    npm install --prefix engines/chdb --no-save --no-audit --no-fund >&2
  fi
  exit 0
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
