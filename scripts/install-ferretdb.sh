#!/usr/bin/env bash
# Builds FerretDB (a MongoDB-wire server) from its Go module into a cache directory outside
# the repository and prints the binary's path. Later runs reuse the cached binary.
# FerretDB's module lacks build/version/version.txt (its release tooling writes it), so the
# module is copied somewhere writable and the file is written before building.
set -euo pipefail

version="v1.24.2"
cache_dir="${FERRETDB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wa-assistant/ferretdb-$version}"
binary="$cache_dir/ferretdb"

if [[ -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi

command -v go >/dev/null || { echo "install-ferretdb: Go is required to build FerretDB" >&2; exit 1; }

export GOFLAGS="-mod=mod" GOTOOLCHAIN=local GOTELEMETRY=off
module_dir="$(go mod download -json "github.com/FerretDB/FerretDB@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "$module_dir" ]] || { echo "install-ferretdb: go mod download gave no directory" >&2; exit 1; }

build_dir="$(mktemp -d)"
trap 'chmod -R u+w "$build_dir" 2>/dev/null; rm -rf "$build_dir"' EXIT
cp -R "$module_dir/." "$build_dir/"
chmod -R u+w "$build_dir"
echo "$version" > "$build_dir/build/version/version.txt"

mkdir -p "$cache_dir"
(cd "$build_dir" && go build -buildvcs=false -o "$binary.tmp" ./cmd/ferretdb) >&2
mv "$binary.tmp" "$binary"
echo "$binary"
