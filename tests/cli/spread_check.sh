#!/bin/sh
# The schedule spread's budget in a certificate (docs/design.md#schedule-
# spread): simt.bwd_atomic (racy, a seedable schedule) runs as many
# schedules as the judged cases' emulated global accesses hold runs of the
# worst case's, at most 20 and at least 2; the accesses are the counts'
# own totals (global loads + stores), and the certificate says why.
#   spread_check.sh MOACERT WORK_DIR
set -eu
moacert=$1 work=$2
rm -rf "$work"
"$moacert" certify attention.bwd --variant simt.bwd_atomic --cases 4 --seed 1 --out "$work" \
  >"$work.log" 2>&1 || { echo "spread_check: certify failed: $(tail -3 "$work.log")" >&2; exit 1; }
/usr/bin/python3 - "$work/certificate.json" <<'PY'
import json, math, sys
c = json.load(open(sys.argv[1]))
s = c.get("schedule_spread")
if not s or "budget" not in s:
    sys.exit("spread_check: no schedule_spread.budget in the certificate")
b, totals = s["budget"], c["counts"]["totals"]
accesses = totals["global loads"] + totals["global stores"]
if b["cases_global_accesses"] != accesses:
    sys.exit(f"spread_check: the cases' accesses {b['cases_global_accesses']} are not the counts' "
             f"loads + stores, {accesses}")
worst = b["worst_case_global_accesses"]
expected = 20 if worst <= 0 else min(20, max(2, math.floor(accesses / worst)))
if b["schedules"] != expected or s["runs"] != expected or b["promised"] != 20:
    sys.exit(f"spread_check: {s['runs']} runs, {b['schedules']} schedules; the accesses give "
             f"{expected}")
if not b["why"].startswith(("all 20: " if expected == 20 else f"{expected} of 20: ")):
    sys.exit(f"spread_check: why does not say the count: {b['why']!r}")
print(f"spread_check: {s['runs']} schedules: {b['why']}")
PY
