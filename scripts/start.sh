#!/usr/bin/env bash
# Quick start on a Debian machine:
#
#   OPENAI_API_KEY=sk-… bash scripts/start.sh      # or run it bare and type the key when asked
#   bash scripts/start.sh --stop                    # stops a Redis/FerretDB an earlier run left
#
# Installs what the service needs (Node 24 via npm, the npm packages, redis-server, Go and
# FerretDB), writes a working .env on the first run (the widget on at http://localhost:PORT/demo,
# a generated WIDGET_TOKEN_SECRET, WhatsApp off until the TWILIO_* variables are set), starts
# Redis and FerretDB locally unless .env points REDIS_URL / MONGODB_URI elsewhere (or names a
# Redis Cluster in REDIS_CLUSTER_NODES), builds, and runs web + worker in one process (or `web`
# / `worker` alone as the first argument). Local data lives in .data/ (git-ignored). Ctrl-C or
# SIGTERM stops the service and the Redis and FerretDB this run started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

mkdir -p .data
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Stops the local store whose pid file .data/<name>.pid names (one this script started).
stop_store() {
  local name="$1" pidfile=".data/$1.pid" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    echo "start: stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
}

if [[ "${1:-}" == "--stop" ]]; then
  stop_store redis
  stop_store ferretdb
  exit 0
fi

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}

# --- First run: a .env that works as it is ------------------------------------------------------
if [[ ! -f .env ]]; then
  key="${OPENAI_API_KEY:-}"
  if [[ -z "$key" && -t 0 ]]; then
    read -rsp "Model API key (OPENAI_API_KEY): " key
    echo
  fi
  if [[ -z "$key" ]]; then
    echo "start: the model key is the one thing to give: OPENAI_API_KEY=sk-… bash scripts/start.sh" >&2
    exit 1
  fi
  port="${PORT:-3000}"
  secret="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
  # From .env.example: the key, a local PUBLIC_BASE_URL, a widget secret; the TWILIO_* placeholders
  # commented out (WhatsApp stays off until they are set).
  base="${PUBLIC_BASE_URL:-http://localhost:$port}"
  KEY="$key" PORT_VALUE="$port" BASE="$base" SECRET="$secret" awk '
    /^OPENAI_API_KEY=/ { print "OPENAI_API_KEY=" ENVIRON["KEY"]; next }
    /^PUBLIC_BASE_URL=/ { print "PUBLIC_BASE_URL=" ENVIRON["BASE"]; next }
    /^# PORT=/ && ENVIRON["PORT_VALUE"] != "3000" { print "PORT=" ENVIRON["PORT_VALUE"]; next }
    /^TWILIO_(ACCOUNT_SID|AUTH_TOKEN|WHATSAPP_FROM)=/ { print "# " $0; next }
    /^# WIDGET_TOKEN_SECRET=/ { print "WIDGET_TOKEN_SECRET=" ENVIRON["SECRET"]; next }
    { print }
  ' .env.example >.env.tmp
  mv .env.tmp .env
  chmod 600 .env
  echo "start: wrote .env — the widget answers at $base/demo; WhatsApp is off until TWILIO_* are set in .env"
fi
set -a
# shellcheck disable=SC1091
. ./.env
set +a

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export MONGODB_URI="${MONGODB_URI:-mongodb://127.0.0.1:27017/wa-assistant}"

# A loopback URL's port, when the service is to start that store itself.
local_port() {
  local pattern="^$1://(127\.0\.0\.1|localhost):([0-9]+)"
  [[ "$2" =~ $pattern ]] && echo "${BASH_REMATCH[2]}"
}

started=()
cleanup() {
  local status=$?
  trap - INT TERM EXIT
  if [[ -n "${service:-}" ]] && kill -0 "$service" 2>/dev/null; then
    kill -TERM "$service" 2>/dev/null || true
    wait "$service" 2>/dev/null || true
  fi
  for name in "${started[@]}"; do stop_store "$name"; done
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

redis_port="$(local_port redis "$REDIS_URL" || true)"
if [[ -z "${REDIS_CLUSTER_NODES:-}" && -n "$redis_port" ]] && ! listening "$redis_port"; then
  command -v redis-server >/dev/null || { as_root apt-get update -qq && as_root apt-get install -y -qq redis-server; }
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$PWD/.data" --appendonly yes --daemonize yes \
    --logfile "$PWD/.data/redis.log" --pidfile "$PWD/.data/redis.pid"
  for _ in $(seq 50); do [[ -f .data/redis.pid ]] && listening "$redis_port" && break; sleep 0.1; done
  started+=(redis)
  echo "start: redis-server on 127.0.0.1:$redis_port (data in .data/)"
fi

if [[ ! -x node_modules/.bin/node || package-lock.json -nt node_modules/.package-lock.json ]]; then
  # The system's npm may run on an older Node than the project's; the Node 24 the `node` package
  # brings runs everything after this, so its engine warnings are noise here.
  npm ci --no-audit --no-fund --loglevel=error
fi

mongo_port="$(local_port mongodb "$MONGODB_URI" || true)"
if [[ -n "$mongo_port" ]] && ! listening "$mongo_port"; then
  ferretdb="$(bash scripts/install-ferretdb.sh)"
  mkdir -p .data/ferretdb .data/ferretdb-state
  "$ferretdb" --handler=sqlite --sqlite-url="file:$PWD/.data/ferretdb/" --state-dir="$PWD/.data/ferretdb-state" \
    --listen-addr="127.0.0.1:$mongo_port" --debug-addr=- --telemetry=disable --log-level=warn >.data/ferretdb.log 2>&1 &
  echo $! >.data/ferretdb.pid
  started+=(ferretdb)
  for _ in $(seq 100); do listening "$mongo_port" && break; sleep 0.2; done
  echo "start: FerretDB on 127.0.0.1:$mongo_port (data in .data/ferretdb)"
fi

npm run build --silent
# --max-old-space-size: see docs/observability.md, "Memory" (caps how far V8 lets the heap grow between collections).
# --max-semi-space-size=16 for the web process alone (docs/deployment.md, "Memory"): `all` runs turns too.
role="${1:-all}"
young=()
[[ "$role" == web ]] && young=(--max-semi-space-size=16)
node_modules/.bin/node --enable-source-maps --max-old-space-size=1024 "${young[@]}" dist/src/main.js "$role" &
service=$!
wait "$service"
