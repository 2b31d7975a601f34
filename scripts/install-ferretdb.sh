#!/usr/bin/env bash
# Builds FerretDB (a MongoDB-wire server) from its Go module into a cache directory outside
# the repository and prints the binary's path. Later runs reuse the cached binary.
# FerretDB's module lacks build/version/version.txt (its release tooling writes it), so the
# module is copied somewhere writable and the file is written before building. A step that takes
# long (the Go download, the module download, the build) says every 5 s, on stderr, that it runs.
set -euo pipefail

# Runs "$@" in the background (its stdout is the caller's), a line on stderr every 5 s while it
# runs; Ctrl-C or SIGTERM ends it, the first time.
progress() {
  local label="$1" begun=$SECONDS next=5 pid status=0
  shift
  "$@" &
  pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null; exit 130' INT
  trap 'kill -TERM "$pid" 2>/dev/null; exit 143' TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - begun >= next)); then
      echo "install-ferretdb: $label… ($((SECONDS - begun)) s)" >&2
      next=$((next + 5))
    fi
  done
  wait "$pid" || status=$?
  trap - INT TERM
  return "$status"
}

version="v1.24.2"
# "-idfix": the build carries the one-line patch below; the name keeps an unpatched cache from being used.
cache_dir="${FERRETDB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wa-assistant/ferretdb-$version-idfix}"
binary="$cache_dir/ferretdb"

if [[ -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi

# Go: FerretDB 1.24's module needs Go 1.24 or newer. The go on PATH (or /usr/local/go) if it is
# new enough; else Debian's golang-go if its candidate is (bookworm's is 1.19); else the official
# toolchain from the Go module proxy (golang.org/toolchain), kept beside the binary's cache.
go_min_minor=24
go_toolchain="go1.24.3"
go_ok() {
  local version
  version="$("$1" env GOVERSION 2>/dev/null)" || return 1
  [[ "$version" =~ ^go1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= go_min_minor))
}
as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}
ensure_go() {
  local candidate
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
    if [[ -n "$candidate" && -x "$candidate" ]] && go_ok "$candidate"; then
      export PATH="$(dirname "$candidate"):$PATH"
      return
    fi
  done
  local debian
  debian="$(apt-cache policy golang-go 2>/dev/null | sed -n 's/^ *Candidate: \(.*\)$/\1/p')"
  if [[ "$debian" =~ ^([0-9]+:)?1\.([0-9]+) ]] && ((BASH_REMATCH[2] >= go_min_minor)); then
    echo "install-ferretdb: installing Debian's golang-go $debian" >&2
    progress "installing golang-go" as_root apt-get install -y -qq golang-go >&2
    go_ok "$(command -v go)" && return
  fi
  local arch toolchain_dir proxy zip
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  toolchain_dir="$(dirname "$cache_dir")/$go_toolchain.linux-$arch"
  if [[ ! -x "$toolchain_dir/bin/go" ]]; then
    proxy="${GOPROXY:-https://proxy.golang.org}"
    proxy="${proxy%%,*}"
    [[ "$proxy" =~ ^https?:// ]] || proxy="https://proxy.golang.org"
    command -v curl >/dev/null && command -v unzip >/dev/null || { as_root apt-get update -qq && as_root apt-get install -y -qq curl unzip >&2; }
    echo "install-ferretdb: Go $go_toolchain from $proxy (Debian's is ${debian:-not available}, FerretDB needs 1.$go_min_minor+)" >&2
    zip="$(mktemp -d)"
    progress "downloading Go $go_toolchain" curl -fsSL "$proxy/golang.org/toolchain/@v/v0.0.1-$go_toolchain.linux-$arch.zip" -o "$zip/go.zip"
    unzip -q "$zip/go.zip" -d "$zip"
    mkdir -p "$(dirname "$toolchain_dir")"
    rm -rf "$toolchain_dir"
    mv "$zip/golang.org/toolchain@v0.0.1-$go_toolchain.linux-$arch" "$toolchain_dir"
    rm -rf "$zip"
    chmod -R u+w "$toolchain_dir"
    chmod +x "$toolchain_dir"/bin/* "$toolchain_dir"/pkg/tool/*/*
  fi
  export PATH="$toolchain_dir/bin:$PATH"
  go_ok "$toolchain_dir/bin/go" || { echo "install-ferretdb: no Go 1.$go_min_minor+ could be installed" >&2; exit 1; }
}
ensure_go

export GOFLAGS="-mod=mod" GOTOOLCHAIN=local GOTELEMETRY=off
echo "install-ferretdb: downloading FerretDB $version's module" >&2
module_dir="$(progress "downloading FerretDB's module" go mod download -json "github.com/FerretDB/FerretDB@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "$module_dir" ]] || { echo "install-ferretdb: go mod download gave no directory" >&2; exit 1; }

build_dir="$(mktemp -d)"
trap 'chmod -R u+w "$build_dir" 2>/dev/null; rm -rf "$build_dir"' EXIT
cp -R "$module_dir/." "$build_dir/"
chmod -R u+w "$build_dir"
echo "$version" > "$build_dir/build/version/version.txt"
# Two patches to FerretDB 1.24's SQLite backend, each a single line, so that a lookup by `_id`
# uses the `_id` index instead of reading the whole collection (at 50k messages that was
# 213 ms per findOne and 452 ms per updateOne; the transcript writer fell behind for good):
#   1. the `_id_` index is created on `_ferretdb_sjson->"_id"` but `_id` is filtered by
#      `_ferretdb_sjson->'$._id'`; SQLite uses an expression index only for the same expression,
#      so the filter is made the index's expression (the values compared are the same JSON text);
#   2. the `_id` filter is pushed down only when it is the filter's one field; a filter with
#      more fields (`{_id, status: {$in: …}}`, the writer's "never regress a status" update) read
#      every row. FerretDB filters every row SQLite returns again with the whole filter, so
#      narrowing by `_id` first returns the same documents.
# The build stops if either line is not found (a different FerretDB version).
metadata="$build_dir/internal/backends/sqlite/metadata/metadata.go"
collection="$build_dir/internal/backends/sqlite/collection.go"
[[ "$(grep -c 'if params.Filter.Len() == 1 {' "$collection")" == 2 ]] || { echo "install-ferretdb: the _id pushdown condition to patch was not found" >&2; exit 1; }
sed -i 's|if params.Filter.Len() == 1 {|if params.Filter.Len() >= 1 {|' "$collection"
grep -q "IDColumn = DefaultColumn + \"->'\$._id'\"" "$metadata" || { echo "install-ferretdb: the _id filter expression to patch was not found" >&2; exit 1; }
sed -i "s|IDColumn = DefaultColumn + \"->'\$._id'\"|IDColumn = DefaultColumn + \"->\\\\\"_id\\\\\"\"|" "$metadata"

mkdir -p "$cache_dir"
echo "install-ferretdb: compiling FerretDB (a few minutes the first time)" >&2
progress "compiling FerretDB" go -C "$build_dir" build -buildvcs=false -o "$binary.tmp" ./cmd/ferretdb >&2
mv "$binary.tmp" "$binary"
echo "$binary"
