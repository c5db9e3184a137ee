#!/usr/bin/env bash
# The planted kernels (tests/planted: the tiled ones of issue #17 item 7,
# those at the deployment envelope of issue #29 item 6) under default
# certify on seeds 1..SEEDS: each faulty kernel must fail on every seed, each
# fixed one hold. Prints one line per run: build, kernel, seed, verdict,
# the shrunk case's shape and the wall time. Figures: docs/performance.md.
#   bash scripts/planted-seeds.sh [BUILD_DIR] [SEEDS] [faulty|fixed|both] [KERNELS]
# KERNELS: op:name pairs, space-separated (default: every planted kernel).
set -euo pipefail
build=${1:-build}
seeds=${2:-10}
which=${3:-both}
kernels=${4:-attention.fwd:tiled_fwd attention.fwd:buffered_fwd attention.decode:split_decode
  attention.fwd:tile_count_fwd attention.fwd:group8_fwd attention.decode:split64_decode
  rmsnorm:width_rmsnorm attention.bwd:key_tile_bwd}
moacert=$build/cli/moacert
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
builds=(faulty fixed)
[[ $which != both ]] && builds=("$which")
for b in "${builds[@]}"; do
  lib=$build/tests/planted/libplanted_$b.so
  for seed in $(seq 1 "$seeds"); do
    for k in $kernels; do
      op=${k%%:*} name=${k#*:}
      start=$(date +%s.%N)
      rc=0
      "$moacert" certify "$op" --plugin "$lib#$name" --seed "$seed" --out "$out/run" \
        >"$out/log" 2>&1 || rc=$?
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      verdict=$(grep -E ": (holds|FAILS) \(" "$out/log" | sed 's/.*: \(holds\|FAILS\) (\(.*\))/\1 (\2)/')
      shape=$(grep -A1 '^## Counterexample' -m1 "$out/run/certificate.md" >/dev/null 2>&1 &&
        sed -n '/^```$/{n;p;q}' "$out/run/certificate.md" | sed -E 's/ scale=[^ ]+ values=[^ ]+ seed=[0-9]+//' || true)
      printf '%s %s seed=%s rc=%s %s %s %.1f s\n' "$b" "$name" "$seed" "$rc" "$verdict" \
        "${shape:+[$shape]}" "$wall"
      rm -rf "$out/run"
    done
  done
done
