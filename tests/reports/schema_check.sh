#!/bin/sh
# Every kind of certificate certify writes validates against
# docs/certificate.schema.json (docs/certificate.md), and so does every
# certificate.json other tests of the suite left under the build folder
# (those written by this build of moacert);
# the validator is shown to reject faults planted in a valid one.
#   schema_check.sh MOACERT WORK_DIR SCHEMA BUILD_DIR
set -eu
moacert=$1 work=$2 schema=$3 build=$4
validate="/usr/bin/python3 $(dirname "$0")/validate_certificates.py"
rm -rf "$work"
mkdir -p "$work"
# Holds, every variant of an op (a summary, PyTorch's equivalence report,
# the emulator's counts where the build has simt.rmsnorm).
"$moacert" certify rmsnorm --cases 3 --seed 1 --out "$work/all" >/dev/null
# Fails (max-ulp=0: no rounded result is exact everywhere): a counterexample.
rc=0
"$moacert" certify rmsnorm --variant cpu.dnf --rule max-ulp=0 --cases 2 --seed 1 \
  --out "$work/fails" >/dev/null || rc=$?
[ $rc -eq 1 ] || { echo "schema_check: the max-ulp=0 run exited $rc, not 1"; exit 1; }
# Case files instead of generated cases.
"$moacert" certify rmsnorm --variant cpu.dnf --out "$work/case_files" \
  --case "$(dirname "$0")/../oracle/cases/rmsnorm_f16.json" >/dev/null
$validate "$schema" --newer-than "$moacert" "$work" "$build"
$validate "$schema" --plant "$work/fails/certificate.json"
