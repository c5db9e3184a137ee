#!/usr/bin/env bash
# Installs every Debian package moacert needs, in one apt-get line, then
# the deployed CPU libraries the adapters certify (scripts/setup-deployed.sh:
# two npm packages, pinned by a lockfile).
# A no-op (no apt-get, no npm) when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-context-dev libmpfr-dev libgmp-dev libmpfi-dev
  librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libopenblas0-pthread libopenblas-dev libdlpack-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwy-dev libsleef-dev libhwloc-dev libomp-dev
  libopenmpi-dev openmpi-bin gnuplot-nox python3-mpmath python3-jsonschema chromium
  clang libclang-rt-14-dev gfortran procps
  python3-numpy python3-pytest python3-torch
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

bash "$(dirname "$0")/setup-deployed.sh"
