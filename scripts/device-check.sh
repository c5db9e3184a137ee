#!/usr/bin/env bash
# scripts/device-check.sh OUTDIR: on a machine with an NVIDIA GPU, builds
# moacert with CUDA for the device present, runs the property suite on the
# device's variants (cuda.*), and `moacert bench` for every CUDA variant
# against LibTorch (variant `torch`) and, when the machine's Python has a
# CUDA PyTorch, against its scaled-dot-product attention. Writes JSON
# results and device-check.log to OUTDIR, in under 8 minutes (each step has
# a deadline; a step that would pass it is skipped and says so).
#
# It uses the machine's own compilers and CUDA toolkit. Debian packages the
# build needs and the machine lacks (it may reach no registry) are taken
# from MOACERT_DEPS (default deps/ in the checkout): a folder of packages
# extracted with `dpkg-deb -x PKG.deb deps/` on a machine that has them
# (scripts/pack-deps.sh, which names the packages).
#
# Written without a GPU to try it on (the task that wrote it had none):
# the first run on a device is its test.
set -uo pipefail
out=${1:?usage: scripts/device-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/device-check.log
exec > >(tee "$log") 2>&1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
start=$(date +%s)
budget=${DEVICE_CHECK_SECONDS:-460}  # 8 minutes, less a margin for the transfers
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "== $(date -u +%T) [$(left) s left] $*"; }
status=0

step "device"
if ! command -v nvidia-smi >/dev/null; then
  echo "device-check: no nvidia-smi: no GPU here"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$out/device.csv"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -2

deps=${MOACERT_DEPS:-$root/deps}
cmake_extra=()
if [ -d "$deps/usr" ]; then
  echo "device-check: Debian packages from $deps"
  export CPATH="$deps/usr/include:$deps/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig"
  cmake_extra+=(-DCMAKE_PREFIX_PATH="$deps/usr")
fi

step "build (sm_$cap)"
build=${BUILD:-build-device}
jobs=$(nproc)
if ! timeout $(( $(left) - 150 )) cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DMOACERT_CUDA_ARCHITECTURES="$cap" -DMOACERT_WITH_MPI=OFF \
    "${cmake_extra[@]}" >"$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"
  echo "device-check: configure failed"
  exit 1
fi
grep -E "^--   (CUDA|LibTorch)" "$out/configure.log"
if ! timeout $(( $(left) - 120 )) cmake --build "$build" --target moacert prop_ops -j"$jobs" \
    >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "device-check: build failed (or ran out of time)"
  exit 1
fi
moacert=$build/cli/moacert
"$moacert" list attention.fwdbwd | tee "$out/list.txt"
if ! grep -q "cuda.fused_v1" "$out/list.txt"; then
  echo "device-check: no cuda.* variants registered (no device seen by the CUDA runtime?)"
  exit 1
fi

step "properties on the device (cuda.*)"
# prop_ops restricted to the device's variants; a few cases each.
for op in attention.fwd attention.bwd attention.fwdbwd; do
  [ "$(left)" -gt 150 ] || { echo "skipped $op: out of time"; continue; }
  MOACERT_VARIANTS=cuda. RC_PARAMS="seed=20261202 max_success=${CASES:-25}" \
    timeout 90 "$build/tests/prop_ops" --op=$op --gtest_output=json:"$out/properties-$op.json" \
    >"$out/properties-$op.log" 2>&1
  rc=$?
  echo "properties $op: exit $rc ($(grep -c '^\[       OK' "$out/properties-$op.log") ok," \
       "$(grep -c '^\[  FAILED' "$out/properties-$op.log") failed lines)"
  [ $rc -eq 0 ] || status=1
done

step "bench"
bench() {  # bench NAME OP VARIANTS SHAPE [--causal]
  local name=$1 op=$2 variants=$3 shape=$4
  shift 4
  [ "$(left)" -gt 40 ] || { echo "skipped bench $name: out of time"; return; }
  timeout 120 "$moacert" bench "$op" --variants "$variants" --shape "$shape" --warmup 1 \
    --repeats 3 --json "$@" >"$out/bench-$name.json" 2>"$out/bench-$name.err"
  echo "bench $name: exit $? $(head -c 600 "$out/bench-$name.json")"
}
torch=
if "$moacert" list attention.fwd | grep -q "^  torch"; then torch=,torch; fi
bench fwdbwd-8192 attention.fwdbwd cuda.fused_v1,cuda.fused_v3,cuda.fused_det \
  B=2,H=8,Hkv=8,N=8192,M=8192,D=64
bench fwd-4096 attention.fwd "cuda.flash$torch" B=2,H=8,Hkv=8,N=4096,M=4096,D=64
bench fwd-4096-causal attention.fwd cuda.flash B=2,H=8,Hkv=8,N=4096,M=4096,D=64 --causal
bench bwd-4096 attention.bwd cuda.bwd_atomic,cuda.bwd_fa2 B=2,H=8,Hkv=8,N=4096,M=4096,D=64
bench fwdbwd-1024-torch attention.fwdbwd "cuda.fused_v1,cuda.fused_v3,cuda.fused_det$torch" \
  B=1,H=8,Hkv=8,N=1024,M=1024,D=64

step "PyTorch scaled_dot_product_attention (the machine's own, if any)"
if [ "$(left)" -gt 30 ] && python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  timeout 60 python3 - "$out/bench-sdpa.json" <<'EOF'
import json, sys, time, torch
import torch.nn.functional as F
res = []
for dtype in (torch.float32, torch.bfloat16):
    q, k, v = (torch.randn(2, 8, 4096, 64, device="cuda", dtype=dtype) for _ in range(3))
    for _ in range(2):
        F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t = time.perf_counter()
        F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    times.sort()
    res.append({"op": "attention.fwd", "shape": "B=2,H=8,N=4096,M=4096,D=64",
                "dtype": str(dtype).replace("torch.", ""), "seconds": times[2],
                "torch": torch.__version__, "device": torch.cuda.get_device_name()})
json.dump(res, open(sys.argv[1], "w"), indent=1)
print(json.dumps(res))
EOF
else
  echo "no CUDA PyTorch in this machine's Python (or out of time): sdpa not timed"
fi

step "done in $(( $(date +%s) - start )) s, status $status"
exit $status
