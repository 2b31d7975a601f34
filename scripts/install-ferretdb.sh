#!/usr/bin/env bash
# Builds FerretDB (a MongoDB-wire server) from its Go module into a cache directory outside
# the repository and prints the binary's path. Later runs reuse the cached binary.
# FerretDB's module lacks build/version/version.txt (its release tooling writes it), so the
# module is copied somewhere writable and the file is written before building.
set -euo pipefail

version="v1.24.2"
# "-idfix": the build carries the one-line patch below; the name keeps an unpatched cache from being used.
cache_dir="${FERRETDB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wa-assistant/ferretdb-$version-idfix}"
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
(cd "$build_dir" && go build -buildvcs=false -o "$binary.tmp" ./cmd/ferretdb) >&2
mv "$binary.tmp" "$binary"
echo "$binary"
