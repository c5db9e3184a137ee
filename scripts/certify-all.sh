#!/usr/bin/env bash
# The main job: certify every built-in variant of every op (f32, default
# rule apriori) and write the certificates under OUT (default out/):
# OUT/<op>/certificate.{json,md} summing up OUT/<op>/<variant>/.
# Exit status: 0 when every variant holds, 1 when any fails.
set -uo pipefail
out=${1:-out}
cases=${CASES:-50}
seed=${SEED:-1}
moacert=${MOACERT:-"$(dirname "$0")/../build/cli/moacert"}
status=0
for op in attention.fwd attention.bwd attention.fwdbwd attention.decode rmsnorm mlp.swiglu block; do
  "$moacert" certify "$op" --cases "$cases" --seed "$seed" --out "$out/$op" || status=$?
done
echo "certificates: $out/<op>/certificate.md"
exit "$status"
