#!/usr/bin/env bash
# Quick start on a Debian machine: installs what the service needs (Node 24 via npm, the npm
# packages, redis-server, FerretDB), starts Redis and FerretDB locally unless .env points
# REDIS_URL / MONGODB_URI elsewhere (or names a Redis Cluster in REDIS_CLUSTER_NODES), builds, and runs web + worker in one process.
# Local data lives in .data/ (git-ignored). Stop with Ctrl-C; the local stores keep running.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ! -f .env ]]; then
  cp .env.example .env
  echo "start: created .env from .env.example — fill in PUBLIC_BASE_URL, TWILIO_* and a model key (OPENAI_API_KEY, or another provider with MODEL_FAST/MODEL_SMART), then run this again." >&2
  exit 1
fi
set -a
# shellcheck disable=SC1091
. ./.env
set +a

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export MONGODB_URI="${MONGODB_URI:-mongodb://127.0.0.1:27017/wa-assistant}"
mkdir -p .data

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ -z "${REDIS_CLUSTER_NODES:-}" && "$REDIS_URL" =~ ^redis://(127\.0\.0\.1|localhost):6379 ]] && ! listening 6379; then
  command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; }
  redis-server --port 6379 --bind 127.0.0.1 --dir "$PWD/.data" --appendonly yes --daemonize yes --logfile "$PWD/.data/redis.log"
  echo "start: redis-server on 127.0.0.1:6379 (data in .data/)"
fi

if [[ ! -x node_modules/.bin/node || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi

if [[ "$MONGODB_URI" =~ ^mongodb://(127\.0\.0\.1|localhost):27017 ]] && ! listening 27017; then
  export PATH="$PATH:/usr/local/go/bin"
  ferretdb="$(bash scripts/install-ferretdb.sh)"
  mkdir -p .data/ferretdb .data/ferretdb-state
  nohup "$ferretdb" --handler=sqlite --sqlite-url="file:$PWD/.data/ferretdb/" --state-dir="$PWD/.data/ferretdb-state" \
    --listen-addr=127.0.0.1:27017 --debug-addr=- --telemetry=disable --log-level=warn >.data/ferretdb.log 2>&1 &
  for _ in $(seq 50); do listening 27017 && break; sleep 0.2; done
  echo "start: FerretDB on 127.0.0.1:27017 (data in .data/ferretdb)"
fi

npm run build --silent
# --max-old-space-size: see README "Memory" (caps how far V8 lets the heap grow between collections).
exec node_modules/.bin/node --enable-source-maps --max-old-space-size=1024 dist/src/main.js "${1:-all}"
