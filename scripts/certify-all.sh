#!/usr/bin/env bash
# The main job: certify every built-in variant of every op (f32, default
# rule apriori) and write the certificates under OUT (default out/):
# OUT/<op>/certificate.{json,md} summing up OUT/<op>/<variant>/, and one
# page for the whole run, OUT/index.{html,md} (`moacert report --index`):
# every op × variant with its verdict, worst error / allowed, time and
# error histogram, linking each certificate.
# OPS (every op) names the ops, blank-separated; CASES, SEED as certify's.
# Exit status: 0 when every variant holds and every certificate matches its
# schema, 1 otherwise.
set -uo pipefail
out=${1:-out}
cases=${CASES:-50}
seed=${SEED:-1}
ops=${OPS:-"attention.fwd attention.bwd attention.fwdbwd attention.decode rmsnorm mlp.swiglu block"}
moacert=${MOACERT:-"$(dirname "$0")/../build/cli/moacert"}
status=0
written=()
for op in $ops; do
  "$moacert" certify "$op" --cases "$cases" --seed "$seed" --out "$out/$op" || status=$?
  [ -f "$out/$op/certificate.json" ] && written+=("$out/$op")
done
echo "certificates: $out/<op>/certificate.md"
# The run's page, from the certificates written (an op refused with exit 2
# wrote none, and its status stands).
if [ ${#written[@]} -gt 0 ]; then
  "$moacert" report --index --from "${written[@]}" --out "$out" || status=1
fi
# Every certificate against its schema (docs/certificate.md), when the
# validator (Debian's python3-jsonschema) is installed.
if /usr/bin/python3 -c "import jsonschema" 2>/dev/null; then
  here=$(dirname "$0")/..
  /usr/bin/python3 "$here/tests/reports/validate_certificates.py" \
    "$here/docs/certificate.schema.json" "$out" || status=1
fi
exit "$status"
