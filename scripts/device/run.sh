#!/usr/bin/env bash
# The on-device half of scripts/device-check.sh, carried beside the moacert
# binary and its libraries (CARRY/run.sh) and run on the GPU machine as one
# command, within DEVICE_CHECK_SECONDS (460: 8 minutes less a margin):
#
#   bash CARRY/run.sh OUTDIR
#
# 1. the device and the cuda.* variants this binary registers there;
# 2. at once, on 16 cores: certify every cuda.* variant in f32 and bf16
#    (short runs), compute-sanitizer's racecheck, memcheck, initcheck and
#    synccheck over a short certify run of each, and the emulator's count of
#    each variant's launches at a small shape (its simt.* twin);
# 3. Nsight Compute's thread-level counts of the same launches on the GPU
#    (sass__inst_executed_global_{atomics,reductions,loads,stores}), compared
#    with the emulator and the cost function (counts.py);
# 4. bench, alone on the GPU: fused_v1, fused_v3 and fused_det at B=2, H=8,
#    N=M=8192, D=64 and the backward pair at N=M=4096 (f32, bf16), flash_tc
#    at B=2, H=16, N=M=4096, D=128, the fused *_tc at 8192 and bwd_tc at
#    4096 (bf16), then PyTorch's own CUDA
#    scaled_dot_product_attention at the same shapes, each backend pinned in
#    turn for the forward (sdpa.py);
# 5. OUTDIR/summary.log (what each step found) and OUTDIR/raw.tar.gz (every
#    log and JSON): two files, as the device tool brings back at most eight.
#
# Each step has its own timeout, and a step that would pass the budget is
# skipped and says so: one hang cannot eat the machine's time.
#
# DEVICE_CHECK_BACKEND=simt runs the same steps on the simt.* twins (the
# emulator), for trying this script on a machine without a GPU (with
# stand-ins for nvidia-smi, ncu and compute-sanitizer on PATH).
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
raw=$work/raw          # what comes back, packed
scratch=$work/scratch  # what does not (the sanitizer runs' certificates)
mkdir -p "$raw"/{certify,sanitizer,counts,ncu,bench} "$scratch"
summary=$out/summary.log
exec > >(tee "$summary") 2>&1
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
moacert=$here/bin/moacert
backend=${DEVICE_CHECK_BACKEND:-cuda}
start=$(date +%s)
budget=${DEVICE_CHECK_SECONDS:-460}
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "== $(date -u +%T) [$(left) s left] $*"; }
# The end of the current step, in seconds since the epoch (phase SECONDS).
step_end=$((start + budget))
phase() { step_end=$(($(date +%s) + $1)); }
# within SECONDS [CMD...]: CMD with a timeout of SECONDS, of what is left of
# the step, or of what is left less 20 s for packing, whichever is least;
# skipped when under 10 s remain.
within() {
  local s=$1
  shift
  local cap=$(($(left) - 20)) step_cap=$((step_end - $(date +%s)))
  [ "$step_cap" -lt "$cap" ] && cap=$step_cap
  [ "$cap" -lt "$s" ] && s=$cap
  if [ "$s" -lt 10 ]; then
    echo "skipped (out of time): $*"
    return 124
  fi
  timeout -k 5 "$s" "$@" </dev/null  # never the variant list a loop reads
}
status=0
finish() {
  step "done in $(($(date +%s) - start)) s, status $status"
  tar -C "$work" -czf "$out/raw.tar.gz" raw
  echo "raw results: $out/raw.tar.gz ($(du -h "$out/raw.tar.gz" | cut -f1))"
  exec >&- 2>&-  # tee sees the end of the summary and writes it out
  sleep 1
  exit "$status"
}

# A small problem of each op (small_shape OP VARIANT), for the counting, the
# sanitizers and the emulator (a few seconds there); the tensor-core ONFs'
# envelope starts at D = 64.
small_shape() {
  local d=32
  [[ $2 == *_tc ]] && d=64
  case $1 in
    attention.decode) echo B=2,H=4,Hkv=2,L=256,D=$d ;;
    attention.*) echo B=1,H=2,Hkv=2,N=64,M=64,D=$d ;;
    rmsnorm) echo T=64,D=256 ;;
    mlp.swiglu) echo T=32,Dm=64,F=96 ;;
  esac
}

step "device"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv |
  tee "$raw/device.csv"
"$moacert" --version
# "OP VARIANT FORMATS" for every cuda.* variant this binary registers on
# this device (the same list as the simt.* twins:
# kernels/cuda/backend_glue.hpp), FORMATS as the variant declares them.
"$moacert" list >"$raw/list.txt" 2>&1
awk -v b="  $backend." '/^[a-z]/ {op = $1} index($0, b) == 1 {print op, $1, $3}' "$raw/list.txt" \
  >"$raw/variants.txt"
cat "$raw/variants.txt"
if [ ! -s "$raw/variants.txt" ]; then
  echo "device-check: no $backend.* variant registered (moacert list below)"
  cat "$raw/list.txt"
  status=1
  finish
fi

step "certify, sanitizers and the emulator's counts, side by side (170 s at most)"
phase 170
export OMP_NUM_THREADS=2  # about a dozen processes share 16 cores
pids=()
# compute-sanitizer, one process per tool, each over every variant in turn:
# one random case at the small shape after the curated ones.
for tool in racecheck memcheck initcheck synccheck; do
  (while read -r op v _; do
     log=$raw/sanitizer/$tool-$v.log
     within 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$moacert" certify "$op" \
       --variant "$v" --shape "$(small_shape "$op" "$v")" --cases 1 --seed 1 \
       --out "$scratch/$tool-$v" >"$log" 2>&1
     echo "$? $tool $v $(grep -m1 'ERROR SUMMARY' "$log")" >>"$raw/sanitizer/exit-codes-$tool.txt"
   done <"$raw/variants.txt") &
  pids+=($!)
done
# The emulator's count of each variant's launches at the small shape,
# beside the cost function's model (bench --json's "launches").
(while read -r op v _; do
   twin=simt.${v#*.}
   within 60 "$moacert" bench "$op" --variants "$twin" --shape "$(small_shape "$op" "$v")" \
     --warmup 1 --repeats 1 --threads 1 --json >"$raw/counts/$twin.json" 2>"$raw/counts/$twin.err"
 done <"$raw/variants.txt") &
pids+=($!)
# certify every cuda.* variant in each of f32, bf16 and f16 it declares
# (the SIMT ONFs store f32 or bf16, the tensor-core ones bf16 or f16): the
# curated cases and 10 random ones at the default draws, seeded; eight
# runs at a time.
helpers=${#pids[@]}
while read -r op v formats; do
  for dtype in f32 bf16 f16; do
    [[ ,$formats, == *,$dtype,* ]] || continue
    while [ "$(jobs -rp | wc -l)" -ge $((helpers + 8)) ]; do sleep 1; done
    (within 120 "$moacert" certify "$op" --variant "$v" --dtype "$dtype" --cases 10 --seed 20261204 \
       --out "$raw/certify/$v-$dtype" >"$raw/certify/$v-$dtype.log" 2>&1
     echo "$? $v $dtype" >>"$raw/certify/exit-codes.txt") &
    pids+=($!)
  done
done <"$raw/variants.txt"
# These jobs by their ids: a bare `wait` would wait for the tee of the
# summary too, which ends only with the script.
wait "${pids[@]}"
unset OMP_NUM_THREADS
echo "certify (exit 0: holds; 1: a counterexample; 124: timed out or skipped):"
sort -k2 "$raw/certify/exit-codes.txt"
for f in "$raw"/certify/"$backend".*.log; do grep -hE ": (holds|FAILS)" "$f" | head -2; done
awk '$1 != 0 {bad = 1} END {exit bad}' "$raw/certify/exit-codes.txt" || status=1
echo "compute-sanitizer (exit 0: clean; 9: errors found; 124: timed out or skipped):"
cat "$raw"/sanitizer/exit-codes-*.txt
cat "$raw"/sanitizer/exit-codes-*.txt | awk '$1 != 0 {bad = 1} END {exit bad}' || status=1

step "Nsight Compute's counts of each cuda.* launch, against the emulator's and the model's (100 s at most)"
phase 100
metrics=sass__inst_executed_global_atomics,sass__inst_executed_global_reductions
metrics=$metrics,sass__inst_executed_global_loads,sass__inst_executed_global_stores
while read -r op v _; do
  twin=simt.${v#*.}
  # the launches of one call, as many as the emulator counted
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"][0].get("launches", [])))' \
    "$raw/counts/$twin.json" 2>/dev/null || echo 0)
  [ "$n" -gt 0 ] || { echo "$v: no emulator count (see raw/counts/$twin.err): not profiled"; continue; }
  within 60 ncu --csv --print-units base --metrics "$metrics" --launch-count "$n" \
    --log-file "$raw/ncu/$v.csv" "$moacert" bench "$op" --variants "$v" \
    --shape "$(small_shape "$op" "$v")" --warmup 1 --repeats 1 --json >"$raw/ncu/$v.out" 2>&1 ||
    echo "$v: ncu exit $? (see raw/ncu/$v.out)"
done <"$raw/variants.txt"
python3 "$here/counts.py" "$raw" | tee "$raw/counts.txt" || status=1

step "bench, alone on the GPU (what is left)"
phase "$(left)"
bench() {  # bench NAME OP VARIANTS SHAPE DTYPE
  within 90 "$moacert" bench "$2" --variants "$3" --shape "$4" --dtype "$5" --warmup 2 --repeats 5 \
    --json >"$raw/bench/$1.json" 2>"$raw/bench/$1.err" || echo "bench $1: exit $?"
}
big=B=2,H=8,Hkv=8,N=8192,M=8192,D=64
mid=B=2,H=8,Hkv=8,N=4096,M=4096,D=64
for dtype in f32 bf16; do
  bench "fwdbwd-8192-$dtype" attention.fwdbwd \
    "$backend.fused_v1,$backend.fused_v3,$backend.fused_det" "$big" "$dtype"
  bench "bwd-4096-$dtype" attention.bwd "$backend.bwd_atomic,$backend.bwd_fa2" "$mid" "$dtype"
done
# the tensor-core ONFs (in bf16): the forward against PyTorch's flash
# backend, the fused three at 8192 (fused_v3_tc twice fused_v1_tc's speed
# or not) and the backward at 4096 (issue #30's speed)
bench "fwd-tc-4096-bf16" attention.fwd "$backend.flash_tc" B=2,H=16,Hkv=16,N=4096,M=4096,D=128 bf16
bench "fwdbwd-tc-8192-bf16" attention.fwdbwd \
  "$backend.fused_v1_tc,$backend.fused_v3_tc,$backend.fused_det_tc" "$big" bf16
bench "bwd-tc-4096-bf16" attention.bwd "$backend.bwd_tc" "$mid" bf16
within 120 python3 "$here/sdpa.py" "$raw/bench/sdpa.json" >"$raw/bench/sdpa.log" 2>&1 ||
  echo "sdpa: exit $? (see raw/bench/sdpa.log)"
python3 "$here/bench_table.py" "$raw/bench" | tee "$raw/bench.txt"

finish
