#!/bin/sh
# A run killed in the middle of writing a file leaves the previous complete
# file under the final name, never part of the new one (files/atomic_write.hpp).
# The write is stopped deterministically by the helper's test hook
# (MOACERT_STOP_BEFORE_RENAME: SIGSTOP once the temporary file is complete,
# before the rename), then killed with SIGKILL.
#   atomic_write_check.sh MOACERT WORK_DIR CASES_DIR (tests/oracle/cases)
set -eu
moacert=$1 work=$2 cases=$3
rm -rf "$work"
mkdir -p "$work"

fail() { echo "atomic_write_check: $*" >&2; exit 1; }

# stop_and_kill FILE_NAME COMMAND...: runs COMMAND with the hook on FILE_NAME,
# waits until it stops before the rename, kills it.
stop_and_kill() {
  name=$1
  shift
  MOACERT_STOP_BEFORE_RENAME=$name "$@" >/dev/null 2>&1 &
  pid=$!
  waited=0
  while [ "$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)" != T ]; do
    kill -0 $pid 2>/dev/null || fail "$* ended without stopping before renaming $name"
    waited=$((waited + 1))
    [ $waited -lt 1200 ] || { kill -9 $pid; fail "$* did not stop before renaming $name"; }
    sleep 0.05
  done
  kill -9 $pid
  wait $pid 2>/dev/null || true
}

# check FOLDER FILE_NAME SAVED: FILE_NAME is byte for byte the saved file,
# and the killed run's temporary file is complete (the kill came after the
# write, before the rename) and hidden.
check() {
  cmp -s "$1/$2" "$3" || fail "$1/$2 is not the previous complete file after the kill"
  tmp=$(ls -a "$1" | grep -c "^\.$2\.tmp\.") || true
  [ "$tmp" -eq 1 ] || fail "expected the killed run's one temporary file beside $2, found $tmp"
  ! cmp -s "$1/$2" "$1/$(ls -a "$1" | grep "^\.$2\.tmp\.")" ||
    fail "the killed run wrote the same $2 as the first: the check proves nothing"
}

# certify: a complete certificate, then a second run (another seed) killed
# before its certificate.json replaces the first.
"$moacert" certify rmsnorm --variant cpu.dnf --cases 1 --seed 1 --out "$work/certify" >/dev/null
cp "$work/certify/certificate.json" "$work/certificate.saved"
stop_and_kill certificate.json \
  "$moacert" certify rmsnorm --variant cpu.dnf --cases 1 --seed 2 --out "$work/certify"
check "$work/certify" certificate.json "$work/certificate.saved"

# oracle: its answer file, the same way (the second run answers another case).
mkdir "$work/oracle"
"$moacert" oracle rmsnorm --input "$cases/rmsnorm_f16.json" --output "$work/oracle/answer.json"
cp "$work/oracle/answer.json" "$work/answer.saved"
stop_and_kill answer.json \
  "$moacert" oracle attention.fwd --input "$cases/fwd_f32.json" --output "$work/oracle/answer.json"
check "$work/oracle" answer.json "$work/answer.saved"
echo "atomic_write_check: both killed writes left the previous complete file"
