#!/bin/sh
# certify --jobs 2 against --jobs 1 (docs/design.md#jobs): the same
# certificates field for field, times, date and command line aside
# (tests/mpi/compare_certificates.py), for every variant of an op (its
# in-process variants judged two at a time, the emulator's one at a time)
# and for a run that fails part-way (a rule no variant meets), whose
# counterexample is the lowest failing case, shrunk the same way; and
# seconds_by_phase's phases, timed apart, in those certificates.
#   jobs_check.sh MOACERT WORK_DIR SOURCE_DIR
set -eu
moacert=$1 work=$2 source=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "jobs_check: $*" >&2; exit 1; }
compare="/usr/bin/python3 $source/tests/mpi/compare_certificates.py"

# certify_with NAME JOBS EXPECTED_RC ARGS...
certify_with() {
  name=$1 jobs=$2 expected=$3
  shift 3
  rc=0
  "$moacert" certify "$@" --jobs "$jobs" --out "$work/$name.$jobs" >"$work/$name.$jobs.log" 2>&1 ||
    rc=$?
  [ $rc -eq "$expected" ] || fail "$name with $jobs jobs exited $rc: $(tail -3 "$work/$name.$jobs.log")"
}

certify_with every 1 0 rmsnorm --cases 12 --seed 3
certify_with every 2 0 rmsnorm --cases 12 --seed 3
grep -q "^cpu.fused: 2 cases at once" "$work/every.2.log" || fail "cpu.fused not judged 2 at a time"
grep -q "^simt.rmsnorm: one case" "$work/every.2.log" || fail "simt.rmsnorm not one at a time"
$compare "$work/every.1" "$work/every.2"

# A rule the kernel breaks on some cases, not the first (seed 11,
# generation 8: random case 6, the ninth): the lowest failing case, shrunk
# the same way, whatever the other job judged past it.
certify_with failing 1 1 rmsnorm --variant cpu.fused --rule max-ulp=3 --cases 30 --seed 11
certify_with failing 2 1 rmsnorm --variant cpu.fused --rule max-ulp=3 --cases 30 --seed 11
grep -q "FAILS (3 curated + 6 random cases" "$work/failing.1.log" ||
  fail "the failing run did not fail at its ninth case: $(grep FAILS "$work/failing.1.log")"
$compare "$work/failing.1" "$work/failing.2"

# Where the time went (seconds_by_phase): the determinism reruns of a
# variant claiming it, the PyTorch runs beside it, and the shrinking of the
# failing run, each timed apart.
/usr/bin/python3 - "$work" <<'PY' || fail "seconds_by_phase misses a phase"
import json, sys
work = sys.argv[1]
phases = ["generation", "bounds", "oracle", "kernel", "judge", "torch", "determinism",
          "shrinking", "schedule_spread"]
def by_phase(path):
    c = json.load(open(f"{work}/{path}/certificate.json"))
    s = c["seconds_by_phase"]
    missing = [p for p in phases if p not in s]
    if missing: sys.exit(f"{path}: no {missing}")
    return c, s
held, s = by_phase("every.1/cpu.fused")
assert s["determinism"] > 0, f"cpu.fused claims determinism, its reruns took {s['determinism']} s"
assert "vs_torch" not in held or s["torch"] > 0, f"PyTorch ran beside cpu.fused in {s['torch']} s"
assert s["shrinking"] == 0, "a holding run shrank"
failed, s = by_phase("failing.1")
assert s["shrinking"] > 0, f"the failing run's shrinking took {s['shrinking']} s"
print("jobs_check: seconds_by_phase names every phase")
PY
echo "jobs_check: --jobs 2 gives --jobs 1's certificates"
