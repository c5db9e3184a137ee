#!/usr/bin/env bash
# scripts/pack-deps.sh [DIR]: on a Debian machine that reaches its package
# registry, downloads the -dev packages moacert's build needs (and their
# libraries) and extracts them into DIR (default deps/), for a GPU machine
# that reaches no registry: scripts/device-check.sh adds DIR's include and
# library folders to the build (MOACERT_DEPS). Extracted, not installed:
# nothing on this machine changes.
set -euo pipefail
dir=${1:-deps}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
packages=(
  libboost-dev libboost-context-dev libboost-context1.74.0 libmpfr-dev libmpfr6 libgmp-dev
  libgmp10 libmpfi-dev libmpfi0 librapidcheck-dev libgtest-dev libgmock-dev libdlpack-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libhwy-dev libhwy1 libsleef-dev libsleef3
  libhwloc-dev libhwloc15
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${packages[@]}")
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
echo "pack-deps: ${#packages[@]} packages in $dir ($(du -sh "$dir" | cut -f1))"
