#!/usr/bin/env bash
# Installs the deployed CPU libraries whose kernels moacert's adapters
# certify (docs/deployed-kernels.md): ggml 0.25.1 as
# @node-llama-cpp/linux-x64 3.22.1 ships it and ONNX Runtime 1.30.0 as
# onnxruntime-node 1.30.0 ships it, from the npm registry, pinned by
# third_party/deployed/package-lock.json (integrity hashes), into
# third_party/deployed/node_modules (ignored by git). `npm ci
# --ignore-scripts`: the binaries are inside the packages, and no install
# script runs (onnxruntime-node's would download CUDA providers). CMake
# builds the adapters when the folder holds the binaries.
# A no-op when the installed tree already matches the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../third_party/deployed"

if ! command -v npm >/dev/null; then
  echo "setup-deployed: installing Debian's npm"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends npm
fi

ggml=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so
ort=node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1
# npm ci rewrites node_modules/.package-lock.json; the same lockfile twice
# means nothing to do.
if [ -f "$ggml" ] && [ -f "$ort" ] && cmp -s package-lock.json node_modules/.moacert-lock; then
  echo "setup-deployed: ggml and ONNX Runtime present (third_party/deployed/node_modules)"
  exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund
for f in "$ggml" "$ort"; do
  [ -f "$f" ] || { echo "setup-deployed: npm ci left no $f" >&2; exit 1; }
done
cp package-lock.json node_modules/.moacert-lock
echo "setup-deployed: installed ggml and ONNX Runtime into third_party/deployed/node_modules"
