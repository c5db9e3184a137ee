#!/usr/bin/env bash
# scripts/performance.sh BUILD_DIR [RESULTS_DIR]: measures the current figures
# of docs/performance.md and writes the page. Runs `moacert bench --json` for
# every op at a small fixed shape, the Google Benchmark programs of bench/
# with short runs, and sampled_certify_bench on one case per op family; keeps
# the raw output, each result beside a .cmd file holding its command, under
# RESULTS_DIR (default perf-results/, not committed); then calls
# scripts/performance-page.py. About 5 minutes on 2 cores; the sizes are small
# so that the run fits a shared machine, and the page records the load average.
set -euo pipefail
build=${1:?usage: scripts/performance.sh BUILD_DIR [RESULTS_DIR]}
results=${2:-perf-results}
root=$(cd "$(dirname "$0")/.." && pwd)
moacert=$build/cli/moacert
threads=$(nproc)
rm -rf "$results"
mkdir -p "$results/bench" "$results/gbench" "$results/sampled"

# run NAME OUTPUT COMMAND...: runs COMMAND with stdout to OUTPUT, its command
# line to OUTPUT's .cmd; a command that fails or times out leaves no result.
run() {
  local out=$1
  shift
  echo "performance.sh: $*" >&2
  if timeout 300 "$@" >"$out.tmp"; then
    mv "$out.tmp" "$out"
    echo "$*" >"${out%.*}.cmd"
  else
    echo "performance.sh: failed (exit $?), left out: $*" >&2
    rm -f "$out.tmp"
  fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# The shapes: each op's problem scaled down so that torch and every CPU
# variant take well under a second a call. cpu.dnf (the naive baseline) and
# the SIMT emulator's variants (minutes a call) are left out.
declare -A shape=(
  [attention.fwd]=B=1,H=8,N=1024,M=1024,D=64
  [attention.bwd]=B=1,H=8,N=1024,M=1024,D=64
  [attention.fwdbwd]=B=1,H=8,N=1024,M=1024,D=64
  [attention.decode]=B=4,H=32,Hkv=8,L=2048,D=128
  [rmsnorm]=T=4096,D=4096
  [mlp.swiglu]=T=256,Dm=1024,F=2816
  [block]=
)
for op in attention.fwd attention.bwd attention.fwdbwd attention.decode rmsnorm mlp.swiglu block; do
  variants=$("$moacert" list 2>/dev/null | awk -v op="$op" '
    /^[^ ]/ { this = ($1 == op) } this && /^  [a-z]/ && $1 != "cost" { print $1 }' |
    grep -v -e '^cpu\.dnf$' -e '^simt\.' -e '^cuda\.' | paste -sd, -)
  args=(bench "$op" --variants "$variants" --threads "$threads" --json)
  [[ -n ${shape[$op]} ]] && args+=(--shape "${shape[$op]}")
  run "$results/bench/$op.json" "$moacert" "${args[@]}"
done

# The built-in CPU variants against the deployed libraries' kernels
# (adapters/, docs/deployed-kernels.md), when the build has the adapters:
# the same shapes, f32, decode with an f16 KV cache as llama.cpp runs it;
# the adapters on as many threads as the variants, their wrapper's lse
# (as costly as the attention) left out.
mkdir -p "$results/deployed"
ggml=$build/adapters/libmoacert_ggml.so
ort=$build/adapters/libmoacert_onnxruntime.so
deployed=(
  "attention.fwd f32 cpu.flash $ggml#flash_attn_ext ggml"
  "attention.fwd f32 cpu.flash $ort#attention onnxruntime"
  "attention.decode f16 cpu.split $ggml#decode_f16_cache ggml"
  "attention.decode f32 cpu.split $ort#attention_decode onnxruntime"
  "rmsnorm f32 cpu.fused $ggml#rms_norm ggml"
  "rmsnorm f32 cpu.fused $ort#rms_normalization onnxruntime"
  "mlp.swiglu f32 cpu.tiled $ggml#swiglu_mlp ggml"
  "mlp.swiglu f32 cpu.tiled $ort#matmul_swiglu onnxruntime"
)
for row in "${deployed[@]}"; do
  read -r op dtype variant plugin library <<<"$row"
  [[ -f ${plugin%#*} ]] || continue
  run "$results/deployed/$op.$dtype.$library.json" env MOACERT_ADAPTER_THREADS="$threads" \
    "$moacert" bench "$op" --variants "$variant" \
    --plugin "$plugin" --dtype "$dtype" --threads "$threads" --json --shape "${shape[$op]}"
done

short=--benchmark_min_time=0.05
run "$results/gbench/oracle_bench.json" "$build/bench/oracle_bench" "$short" --benchmark_format=json
run "$results/gbench/simt_bench.json" "$build/bench/simt_bench" "$short" --benchmark_format=json

scb=$build/bench/sampled_certify_bench
run "$results/sampled/rmsnorm.cpu.fused.txt" "$scb" rmsnorm cpu.fused T=4096,D=1024
run "$results/sampled/mlp.swiglu.cpu.tiled.txt" "$scb" mlp.swiglu cpu.tiled T=256,Dm=1024,F=2816
run "$results/sampled/attention.fwd.cpu.flash.txt" "$scb" attention.fwd cpu.flash 1 8 8 1024 1024 64

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
cat >"$results/run.json" <<JSON
{"commit": "$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo +dirty)",
 "machine": "$cpu, $threads cores",
 "date": "$(date -u '+%Y-%m-%d %H:%M UTC')",
 "load_before": "$load_before",
 "load_after": "$load_after"}
JSON
python3 "$root/scripts/performance-page.py" "$results" -o "$root/docs/performance.md"
echo "performance.sh: wrote docs/performance.md from $results" >&2
