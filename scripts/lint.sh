#!/usr/bin/env bash
# Runs golangci-lint (the pinned version below, configured by .golangci.yml) over the module.
# The binary is built once into the same cache as the Temporal CLI, outside the clone, so
# fresh clones reuse it (the first build takes a few minutes).
set -euo pipefail

GOLANGCI_LINT_VERSION=v2.15.0
cache_bin="${XDG_CACHE_HOME:-$HOME/.cache}/accountable/bin"
lint_bin="$cache_bin/golangci-lint-$GOLANGCI_LINT_VERSION"
if [ ! -x "$lint_bin" ]; then
  command -v go >/dev/null 2>&1 || { echo "lint.sh: Go is needed to build golangci-lint" >&2; exit 1; }
  echo "lint.sh: building golangci-lint $GOLANGCI_LINT_VERSION into $cache_bin (first time only, takes a few minutes)" >&2
  mkdir -p "$cache_bin"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$tmp" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION")
  mv "$tmp/golangci-lint" "$lint_bin"
fi
cd "$(dirname "$0")/.."
# --allow-serial-runners: wait for another run (a second clone, an editor) instead of failing.
exec "$lint_bin" run --allow-serial-runners ./...
