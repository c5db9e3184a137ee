#!/bin/sh
# stack_overflow_check.sh PROGRAM: PROGRAM must die of a signal within 20 s
# (not hang, not exit 0) after printing the emulator's stack-overflow line.
out=$(timeout 20 "$1" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 124 ] || { echo "FAIL: hung"; exit 1; }
[ $rc -gt 128 ] || { echo "FAIL: exit status $rc, expected death by a signal"; exit 1; }
echo "$out" | grep -Eq 'moacert simt: stack overflow in kernel stack_hog \(block \(0,0,0\), thread \([0-9]+,0,0\)\)' ||
  { echo "FAIL: no stack-overflow message"; exit 1; }
echo "ok: killed by signal $((rc - 128)) with the message"
