#!/usr/bin/env bash
# Certifies every built-in CPU variant of every op in every format it
# supports, under the default rule, for seeds 1..SEEDS (default 10), and
# prints one line per run and a final count. Exit 1 when any run fails.
# Usage: scripts/certify-seeds.sh [OUT] ; env SEEDS, CASES (default 200), JOBS (2),
# OPS (a space-separated list of ops; default every op)
set -uo pipefail
out=${1:-out/seeds}
seeds=${SEEDS:-10}
cases=${CASES:-200}
jobs=${JOBS:-2}
ops=${OPS:-}
moacert=${MOACERT:-"$(dirname "$0")/../build/cli/moacert"}
runs=()
while read -r op variant formats; do
  [[ $variant == cpu.* ]] || continue
  [[ -z $ops || " $ops " == *" $op "* ]] || continue
  for f in ${formats//,/ }; do
    for s in $(seq 1 "$seeds"); do runs+=("$op $variant $f $s"); done
  done
done < <("$moacert" list | awk '/^[a-z]/ {op=$1} /^  [a-z]/ {print op, $1, $3}')
printf '%s\n' "${runs[@]}" | xargs -P "$jobs" -L 1 bash -c '
  op=$0 variant=$1 f=$2 s=$3
  if "'"$moacert"'" certify "$op" --variant "$variant" --dtype "$f" --seed "$s" --cases '"$cases"' \
       --out "'"$out"'/$op/$variant/$f/$s" > "'"$out"'.$op.$variant.$f.$s.log" 2>&1; then
    echo "holds $op $variant $f seed $s"
  else
    echo "FAILS $op $variant $f seed $s: $(grep -m1 reproduce "'"$out"'.$op.$variant.$f.$s.log")"
  fi' | tee "$out.summary"
fails=$(grep -c '^FAILS' "$out.summary")
echo "${#runs[@]} runs, $fails failed"
[ "$fails" -eq 0 ]
