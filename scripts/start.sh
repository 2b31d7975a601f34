#!/usr/bin/env bash
# Quick start on a Debian machine:
#
#   bash scripts/start.sh                                        # asks which model provider (first run)
#   OPENAI_API_KEY=sk-… bash scripts/start.sh                    # or ANTHROPIC_API_KEY=… / GOOGLE_GENERATIVE_AI_API_KEY=…
#   OPENAI_BASE_URL=http://localhost:11434/v1 bash scripts/start.sh   # an OpenAI-compatible server (Ollama)
#   bash scripts/start.sh --stop                                 # stops a running start (service and stores) and stores an earlier run left
#
# Installs what the service needs (Node 24 via npm, the npm packages, redis-server, Go and
# FerretDB), writes a working .env on the first run (the model lists for the provider given, the
# widget on at http://localhost:PORT/demo, a generated WIDGET_TOKEN_SECRET, WhatsApp off until the
# TWILIO_* variables are set), checks the configuration, starts Redis and FerretDB locally unless
# .env points REDIS_URL / MONGODB_URI elsewhere (or names a Redis Cluster in REDIS_CLUSTER_NODES),
# builds when a source is newer than dist/, and runs web + worker in one process (or `web` /
# `worker` alone as the first argument). A variable given on the command line wins over .env (the
# script says which). Local data lives in .data/ (git-ignored). Ctrl-C or SIGTERM stops the
# service (or the install step running) and the Redis and FerretDB this run started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

mkdir -p .data
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stopped_any=""
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
    stopped_any=1
  fi
  rm -f "$pidfile"
}

# Each running start (this script, past --stop) is named by .data/start-<its pid>.pid.
running_start() { [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q 'scripts/start\.sh'; }

# --stop: a start still running is stopped first — its own Ctrl-C path stops its service, then the
# stores it started (stopping the stores under a running service would leave it failing on every
# call) — then whatever store an earlier run left.
if [[ "${1:-}" == "--stop" ]]; then
  for pidfile in .data/start-*.pid; do
    [[ -f "$pidfile" ]] || continue
    pid="$(cat "$pidfile")"
    if running_start "$pid"; then
      echo "start: the service is running (bash scripts/start.sh, pid $pid): stopping it first, then the stores it started"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 600); do running_start "$pid" || break; sleep 0.1; done
      if running_start "$pid"; then
        echo "start: pid $pid is still stopping after 60 s; its stores are left to it" >&2
        exit 1
      fi
      echo "start: stopped the service (pid $pid) and its stores"
      stopped_any=1
    fi
    rm -f "$pidfile"
  done
  stop_store redis
  stop_store ferretdb
  [[ -n "$stopped_any" ]] || echo "start: nothing to stop: no service, Redis or FerretDB started by this script is running"
  exit 0
fi

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}

# --- Stopping: Ctrl-C stops whatever runs, the first time ------------------------------------
# A long step runs in a process group of its own (a background job ignores SIGINT in a script):
# on Ctrl-C or SIGTERM the whole group is ended, then the service and the stores this run started.
started=()
step=""
service=""
announcer=""
model_check=""
cleanup() {
  local status=$?
  trap - INT TERM EXIT
  rm -f ".data/start-$$.pid"
  if [[ -n "$step" ]] && kill -0 "$step" 2>/dev/null; then
    echo "start: stopping the step that was running"
    kill -TERM -- "-$step" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$step" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$step" 2>/dev/null || true
    wait "$step" 2>/dev/null || true
  fi
  [[ -n "$announcer" ]] && kill -TERM "$announcer" 2>/dev/null || true
  [[ -n "$model_check" ]] && kill -TERM "$model_check" 2>/dev/null || true
  if [[ -n "$service" ]] && kill -0 "$service" 2>/dev/null; then
    kill -TERM "$service" 2>/dev/null || true
    wait "$service" 2>/dev/null || true
  fi
  for name in "${started[@]}"; do stop_store "$name"; done
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo $$ >".data/start-$$.pid"

# Runs "$@" as a step of its own (see above); with a label, says every 5 s that it is still running.
run_step() {
  local label="$1" status=0 begun=$SECONDS next=5
  shift
  setsid "$@" &
  step=$!
  while kill -0 "$step" 2>/dev/null; do
    sleep 1
    if [[ -n "$label" ]] && ((SECONDS - begun >= next)); then
      echo "start: $label… ($((SECONDS - begun)) s)"
      next=$((next + 5))
    fi
  done
  wait "$step" || status=$?
  step=""
  return "$status"
}

# --- The packages --------------------------------------------------------------------------------
if [[ ! -x node_modules/.bin/node || package-lock.json -nt node_modules/.package-lock.json ]]; then
  # The system's npm may run on an older Node than the project's; the Node 24 the `node` package
  # brings runs everything after this, so its engine warnings are noise here.
  echo "start: installing the npm packages (npm ci; a first install takes a few minutes)"
  run_step "npm ci still installing" npm ci --no-audit --no-fund --loglevel=error
fi
node=node_modules/.bin/node

# --- First run: a .env that works as it is, for whichever model provider is given --------------
# The model ids an OpenAI-compatible server lists at $1 (Ollama: the models it has pulled), one a
# line, asked with OPENAI_API_KEY when there is one. A server that can't be reached: status 3, and
# why in words on stdout ("nothing listens at …", "… does not resolve").
listed_models() {
  KEY="${OPENAI_API_KEY:-}" "$node" --input-type=module -e '
    const base = process.argv[1].replace(/\/+$/, "");
    const headers = process.env.KEY ? { authorization: `Bearer ${process.env.KEY}` } : {};
    const response = await fetch(`${base}/models`, { headers, signal: AbortSignal.timeout(5000) }).catch((error) => {
      const code = error?.cause?.code ?? error?.cause?.errors?.[0]?.code;
      const why = code === "ECONNREFUSED" ? `nothing listens at ${base}`
        : code === "ENOTFOUND" || code === "EAI_AGAIN" ? `could not reach ${base}: ${new URL(base).hostname} does not resolve (${code})`
        : `could not reach ${base} (${error?.cause?.message ?? error?.message})`;
      process.stdout.write(why);
      process.exit(3);
    });
    const body = response.ok ? await response.json().catch(() => ({})) : {};
    const ids = Array.isArray(body.data) ? body.data.map((model) => model?.id).filter((id) => typeof id === "string") : [];
    process.stdout.write(ids.join("\n"));' "$1" 2>/dev/null
}

ask_provider() {
  local choice
  echo "Which model provider?  1) OpenAI  2) Anthropic  3) Google  4) an OpenAI-compatible server (Ollama, vLLM…)"
  read -rp "Provider [1-4]: " choice
  case "$choice" in
    1) read -rsp "OPENAI_API_KEY: " OPENAI_API_KEY && echo ;;
    2) read -rsp "ANTHROPIC_API_KEY: " ANTHROPIC_API_KEY && echo ;;
    3) read -rsp "GOOGLE_GENERATIVE_AI_API_KEY: " GOOGLE_GENERATIVE_AI_API_KEY && echo ;;
    4)
      read -rp "Its base URL [http://localhost:11434/v1]: " OPENAI_BASE_URL
      OPENAI_BASE_URL="${OPENAI_BASE_URL:-http://localhost:11434/v1}"
      ;;
    *) echo "start: expected 1, 2, 3 or 4" >&2 && exit 1 ;;
  esac
}

if [[ ! -f .env ]]; then
  if [[ -z "${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}${GOOGLE_GENERATIVE_AI_API_KEY:-}${OPENAI_BASE_URL:-}" ]]; then
    if [[ -t 0 ]]; then
      ask_provider
    else
      echo "start: give one model provider: OPENAI_API_KEY=sk-…, ANTHROPIC_API_KEY=…, GOOGLE_GENERATIVE_AI_API_KEY=… or OPENAI_BASE_URL=http://localhost:11434/v1 (Ollama) before bash scripts/start.sh" >&2
      exit 1
    fi
  fi
  oai_key="${OPENAI_API_KEY:-}" fast="${MODEL_FAST:-}" smart="${MODEL_SMART:-}" provider=""
  if [[ -n "$oai_key" && -z "${OPENAI_BASE_URL:-}" ]]; then
    provider="OpenAI (OPENAI_API_KEY)"
  elif [[ -n "${ANTHROPIC_API_KEY:-}" && -z "$oai_key" ]]; then
    provider="Anthropic (ANTHROPIC_API_KEY)"
    fast="${fast:-anthropic:claude-haiku-4-5}" smart="${smart:-anthropic:claude-sonnet-4-5}"
  elif [[ -n "${GOOGLE_GENERATIVE_AI_API_KEY:-}" && -z "$oai_key" ]]; then
    provider="Google (GOOGLE_GENERATIVE_AI_API_KEY)"
    fast="${fast:-google:gemini-2.5-flash}" smart="${smart:-google:gemini-2.5-pro}"
  else
    # An OpenAI-compatible server at OPENAI_BASE_URL (Chat Completions): a local one wants no
    # key, but the service needs one to configure OpenAI's entries, so any word does.
    provider="the OpenAI-compatible server at $OPENAI_BASE_URL (OPENAI_BASE_URL)"
    oai_key="${oai_key:-no-key-needed}"
    reached=0
    listed="$(listed_models "$OPENAI_BASE_URL")" || reached=$?
    if ((reached != 0)); then
      # Not reached: no model to take from it. Named on the command line, the models are used as
      # given (the model check says again, before the URL to open, that the server is not there).
      unreachable="$listed" listed=""
      if [[ -z "$fast" ]]; then
        echo "start: ${unreachable:-could not reach $OPENAI_BASE_URL} (OPENAI_BASE_URL): start the server (Ollama: \`ollama serve\`) or fix OPENAI_BASE_URL, then run again; nothing was started" >&2
        exit 1
      fi
    fi
    # A server that serves OpenAI's own models (a proxy) keeps the default lists.
    if [[ -z "$fast" ]] && grep -qx 'gpt-5-mini' <<<"$listed" && grep -qx 'gpt-5' <<<"$listed"; then
      fast="gpt-5-mini" smart="${smart:-gpt-5}"
    fi
    if [[ -z "$fast" ]]; then
      listed="$(head -n1 <<<"$listed")"
      model="$listed"
      if [[ -z "$model" && -t 0 ]]; then read -rp "The model to use at $OPENAI_BASE_URL (e.g. llama3.1:8b): " model; fi
      if [[ -z "$model" ]]; then
        echo "start: $OPENAI_BASE_URL lists no model: pull one (Ollama: \`ollama pull llama3.1:8b\`) or name one: MODEL_FAST=openai:llama3.1:8b MODEL_SMART=openai:llama3.1:8b" >&2
        exit 1
      fi
      fast="openai:$model"
      [[ -z "$listed" ]] || echo "start: using $model, the first model $OPENAI_BASE_URL lists (MODEL_FAST / MODEL_SMART in .env change it)"
    fi
    smart="${smart:-$fast}"
  fi
  port="${PORT:-3000}"
  secret="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
  # From .env.example: the provider's key (and lists), a local PUBLIC_BASE_URL, a widget secret;
  # the TWILIO_* placeholders commented out (WhatsApp stays off until they are set).
  base="${PUBLIC_BASE_URL:-http://localhost:$port}"
  OAI_KEY="$oai_key" OAI_BASE="${OPENAI_BASE_URL:-}" ANT_KEY="${ANTHROPIC_API_KEY:-}" GOO_KEY="${GOOGLE_GENERATIVE_AI_API_KEY:-}" \
    FAST="$fast" SMART="$smart" PORT_VALUE="$port" BASE="$base" SECRET="$secret" awk '
    /^OPENAI_API_KEY=/ { if (ENVIRON["OAI_KEY"] != "") print "OPENAI_API_KEY=" ENVIRON["OAI_KEY"]; else print "# " $0; next }
    /^# OPENAI_BASE_URL=/ && ENVIRON["OAI_BASE"] != "" { print "OPENAI_BASE_URL=" ENVIRON["OAI_BASE"]; next }
    /^# ANTHROPIC_API_KEY=/ && ENVIRON["ANT_KEY"] != "" { print "ANTHROPIC_API_KEY=" ENVIRON["ANT_KEY"]; next }
    /^# GOOGLE_GENERATIVE_AI_API_KEY=/ && ENVIRON["GOO_KEY"] != "" { print "GOOGLE_GENERATIVE_AI_API_KEY=" ENVIRON["GOO_KEY"]; next }
    /^# MODEL_FAST=/ && ENVIRON["FAST"] != "" { print "MODEL_FAST=" ENVIRON["FAST"]; next }
    /^# MODEL_SMART=/ && ENVIRON["SMART"] != "" { print "MODEL_SMART=" ENVIRON["SMART"]; next }
    /^PUBLIC_BASE_URL=/ { print "PUBLIC_BASE_URL=" ENVIRON["BASE"]; next }
    /^# PORT=/ && ENVIRON["PORT_VALUE"] != "3000" { print "PORT=" ENVIRON["PORT_VALUE"]; next }
    /^TWILIO_(ACCOUNT_SID|AUTH_TOKEN|WHATSAPP_FROM)=/ { print "# " $0; next }
    /^# WIDGET_TOKEN_SECRET=/ { print "WIDGET_TOKEN_SECRET=" ENVIRON["SECRET"]; next }
    { print }
  ' .env.example >.env.tmp
  mv .env.tmp .env
  chmod 600 .env
  echo "start: wrote .env for $provider — the widget answers at $base/demo; WhatsApp is off until TWILIO_* are set in .env"
fi

# --- .env, and what the command line gives ------------------------------------------------------
# A variable set on the command line (or exported before) wins over .env: said once per variable.
declare -A given=()
while IFS= read -r name; do given[$name]="${!name}"; done < <(compgen -e)
set -a
# shellcheck disable=SC1091
. ./.env
set +a
while IFS= read -r name; do
  if [[ -v "given[$name]" && "${given[$name]}" != "${!name}" ]]; then
    export "$name=${given[$name]}"
    echo "start: $name from the command line wins over the value in .env"
  fi
done < <(sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' .env | sort -u)
# A local PUBLIC_BASE_URL (http://localhost:N, as the first run writes it) follows PORT, unless the
# command line gives it: PORT=3001 alone must not leave it naming another port.
if [[ ! -v "given[PUBLIC_BASE_URL]" && "${PUBLIC_BASE_URL:-}" =~ ^http://(localhost|127\.0\.0\.1)(:([0-9]+))?/?$ && "${BASH_REMATCH[3]:-80}" != "${PORT:-3000}" ]]; then
  export PUBLIC_BASE_URL="http://${BASH_REMATCH[1]}:${PORT:-3000}"
  echo "start: PUBLIC_BASE_URL follows PORT: $PUBLIC_BASE_URL (a local address; .env is unchanged)"
fi
unset given

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export MONGODB_URI="${MONGODB_URI:-mongodb://127.0.0.1:27017/wa-assistant}"

# --- The configuration, checked before anything is started or built ------------------------------
if ! "$node" --import tsx --input-type=module -e '
  const { loadConfig } = await import("./src/config.ts");
  try { loadConfig(); } catch (error) { process.stderr.write(`start: ${error.message}\n`); process.exit(1); }'; then
  echo "start: fix .env (or the variable given on the command line) and run again; nothing was started" >&2
  exit 1
fi
# The port, before anything is started (the service says the same and stops, should it be taken later).
if [[ "${1:-all}" != worker ]] && listening "${PORT:-3000}"; then
  echo "start: port ${PORT:-3000} is already in use by another program: stop it, or set PORT to a free port (in .env or on the command line: PORT=3001 bash scripts/start.sh; a local PUBLIC_BASE_URL follows it)" >&2
  exit 1
fi
# Each configured model provider asked once (a models list or the model's entry), in the
# background: what is wrong is printed before the demo URL.
"$node" --import tsx scripts/model-check.ts >.data/model-check.txt 2>&1 &
model_check=$!

# --- The stores: local ones started when the URLs point at loopback and nothing listens ----------
# A loopback URL's port, when the service is to start that store itself.
local_port() {
  local pattern="^$1://([^@/]*@)?(127\.0\.0\.1|localhost):([0-9]+)"
  [[ "$2" =~ $pattern ]] && echo "${BASH_REMATCH[3]}"
}

redis_port="$(local_port redis "$REDIS_URL" || true)"
if [[ -z "${REDIS_CLUSTER_NODES:-}" && -n "$redis_port" ]]; then
  if listening "$redis_port"; then
    database=0
    [[ "$REDIS_URL" =~ ://[^/]+/([0-9]+) ]] && database="${BASH_REMATCH[1]}"
    echo "start: using the Redis already listening on 127.0.0.1:$redis_port, database $database (not started by this script; its data is not in .data/)"
  else
    if ! command -v redis-server >/dev/null; then
      echo "start: installing redis-server (apt-get)"
      export -f as_root
      run_step "still installing redis-server" bash -c 'as_root apt-get update -qq && as_root apt-get install -y -qq redis-server'
    fi
    redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$PWD/.data" --appendonly yes --daemonize yes \
      --logfile "$PWD/.data/redis.log" --pidfile "$PWD/.data/redis.pid"
    for _ in $(seq 50); do [[ -f .data/redis.pid ]] && listening "$redis_port" && break; sleep 0.1; done
    started+=(redis)
    echo "start: redis-server on 127.0.0.1:$redis_port (data in .data/)"
  fi
fi

mongo_port="$(local_port mongodb "$MONGODB_URI" || true)"
if [[ -n "$mongo_port" ]]; then
  if listening "$mongo_port"; then
    echo "start: using the MongoDB-wire server already listening on 127.0.0.1:$mongo_port (not started by this script)"
  else
    ferretdb_cache="${FERRETDB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wa-assistant/ferretdb-v1.24.2-idfix}"
    [[ -x "$ferretdb_cache/ferretdb" ]] || echo "start: building FerretDB (once, a few minutes; cached in $ferretdb_cache)"
    # install-ferretdb.sh says what it is doing every few seconds itself.
    run_step "" bash -c 'bash scripts/install-ferretdb.sh >.data/ferretdb.path'
    ferretdb="$(cat .data/ferretdb.path)"
    mkdir -p .data/ferretdb .data/ferretdb-state
    "$ferretdb" --handler=sqlite --sqlite-url="file:$PWD/.data/ferretdb/" --state-dir="$PWD/.data/ferretdb-state" \
      --listen-addr="127.0.0.1:$mongo_port" --debug-addr=- --telemetry=disable --log-level=warn >.data/ferretdb.log 2>&1 &
    echo $! >.data/ferretdb.pid
    started+=(ferretdb)
    for _ in $(seq 100); do listening "$mongo_port" && break; sleep 0.2; done
    echo "start: FerretDB on 127.0.0.1:$mongo_port (data in .data/ferretdb)"
  fi
fi

# --- The build: only when a source is newer than the last build ---------------------------------
stamp=dist/.built
changed=""
if [[ -f "$stamp" && -f dist/src/main.js ]]; then
  changed="$(find src channels roles scripts/build-widget.ts package.json package-lock.json tsconfig.json tsconfig.build.json \
    -newer "$stamp" -type f -print -quit 2>/dev/null || true)"
fi
if [[ -f "$stamp" && -f dist/src/main.js && -z "$changed" ]]; then
  echo "start: dist/ is up to date with the sources (no build)"
else
  echo "start: building${changed:+ ($changed changed)}"
  touch .data/build-begun
  run_step "still building" npm run build --silent
  mv .data/build-begun "$stamp"
fi

# --- The service ----------------------------------------------------------------------------------
# Once it answers: the model check's findings in words, then where to open the widget.
announce() {
  local port="${PORT:-3000}" base="${PUBLIC_BASE_URL:-http://localhost:${PORT:-3000}}"
  # A local PUBLIC_BASE_URL given on the command line with another port than the one listened on
  # (one from .env follows PORT, above): this port's page is the one that answers.
  if [[ "$base" =~ ^http://(localhost|127\.0\.0\.1)(:([0-9]+))?/?$ && "${BASH_REMATCH[3]:-80}" != "$port" ]]; then
    echo "start: PUBLIC_BASE_URL ($base) names another port than PORT ($port): give both the same port"
    base="http://localhost:$port"
  fi
  "$node" --input-type=module -e '
    const [port, service] = process.argv.slice(1);
    const local = `http://127.0.0.1:${port}`;
    const alive = () => { try { process.kill(Number(service), 0); return true; } catch { return false; } };
    for (;;) {
      if (!alive()) process.exit(1);
      if (await fetch(`${local}/healthz`).then((response) => response.ok, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const demo = await fetch(`${local}/demo`).then((response) => response.ok, () => false);
    process.stdout.write(demo ? "demo" : "up");' "$port" "$service" >.data/announce.txt 2>/dev/null || return 0
  while kill -0 "$model_check" 2>/dev/null; do sleep 0.2; done
  while IFS= read -r line; do echo "start: model check: $line"; done <.data/model-check.txt
  if grep -q '^PROBLEM' .data/model-check.txt; then
    echo "start: the service runs, but the model provider refused it (above): fix .env, then Ctrl-C and run again"
  fi
  if [[ "$(cat .data/announce.txt)" == demo ]]; then
    echo "start: ready — open $base/demo"
  else
    echo "start: ready on $base (the widget is off: no /demo)"
  fi
}

# --max-old-space-size: see docs/observability.md, "Memory" (caps how far V8 lets the heap grow between collections).
# --max-semi-space-size=16 for the web process alone (docs/deployment.md, "Memory"): `all` runs turns too.
role="${1:-all}"
young=()
[[ "$role" == web ]] && young=(--max-semi-space-size=16)
"$node" --enable-source-maps --max-old-space-size=1024 "${young[@]}" dist/src/main.js "$role" &
service=$!
if [[ "$role" != worker ]]; then
  announce &
  announcer=$!
fi
wait "$service"
