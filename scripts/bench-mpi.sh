#!/usr/bin/env bash
# certify under mpirun against one process at a fixed total thread count
# (docs/performance.md#mpi-ranks-and-threads): the wall time of the same
# certification (same seed and cases, so the same certificate) as
#   1 rank x T threads, K ranks x T/K threads (the same T cores), and,
#   for how the two combine, 1 x 1 and K x T (oversubscribed when K·T > cores).
# Each configuration runs REPEATS times, the median is printed; the ratio
# to 1 x T is the speed-up of the ranks at equal threads.
#   scripts/bench-mpi.sh [MOACERT [K [T]]]   (build/cli/moacert, 2, 2)
#   CERTIFY="attention.fwd --variant cpu.flash --cases 40 --seed 1" REPEATS=3
set -euo pipefail
moacert=${1:-build/cli/moacert}
k=${2:-2}
t=${3:-2}
certify=${CERTIFY:-attention.fwd --variant cpu.flash --cases 40 --seed 1}
repeats=${REPEATS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun=(mpirun -n "$k" --allow-run-as-root --oversubscribe --bind-to none)

# run RANKS THREADS: the median wall time of REPEATS runs, in seconds.
run() {
  local ranks=$1 threads=$2 times=()
  for r in $(seq "$repeats"); do
    local start end
    start=$(date +%s.%N)
    if [ "$ranks" -eq 1 ]; then
      OMP_NUM_THREADS=$threads "$moacert" certify $certify --out "$work/$ranks-$threads" >/dev/null 2>&1
    else
      OMP_NUM_THREADS=$threads "${mpirun[@]}" -x OMP_NUM_THREADS "$moacert" certify $certify \
        --out "$work/$ranks-$threads" >/dev/null 2>&1
    fi
    end=$(date +%s.%N)
    times+=("$(awk "BEGIN { print $end - $start }")")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((repeats + 1) / 2))p"
}

echo "moacert certify $certify; $(nproc) cores; median of $repeats"
base=$(run 1 "$t")
printf '%-22s %8.2f s  1.00\n' "1 rank x $t threads" "$base"
split=$(run "$k" $((t / k > 0 ? t / k : 1)))
printf '%-22s %8.2f s  %.2f\n' "$k ranks x $((t / k > 0 ? t / k : 1)) threads" "$split" \
  "$(awk "BEGIN { print $base / $split }")"
one=$(run 1 1)
printf '%-22s %8.2f s  %.2f\n' "1 rank x 1 thread" "$one" "$(awk "BEGIN { print $base / $one }")"
both=$(run "$k" "$t")
printf '%-22s %8.2f s  %.2f\n' "$k ranks x $t threads" "$both" "$(awk "BEGIN { print $base / $both }")"
