#!/bin/sh
# moacert killed by a signal while its plugin worker hangs leaves no worker:
#   signal_check.sh MOACERT LIB SIGNAL OUT
# The worker runs without its parent-death signal, so this checks moacert's
# own handler. (SIGINT is not tested: a shell starts background jobs with it
# ignored, and moacert leaves an ignored signal ignored.)
moacert=$1 lib=$2 sig=$3 out=$4
MOACERT_WORKER_NO_DEATHSIG=1 "$moacert" certify rmsnorm --plugin "$lib" --cases 1 --timeout 60 \
  --out "$out" >/dev/null 2>&1 &
pid=$!
pattern="moacert-plugin-worker serve [0-9]+ $pid $lib\$"
i=0
until pgrep -f "$pattern" >/dev/null; do
  i=$((i + 1))
  if [ $i -gt 200 ]; then
    echo "no worker started"
    kill -9 $pid
    exit 1
  fi
  sleep 0.05
done
kill -"$sig" $pid
wait $pid
rc=$?
sleep 0.2
left=$(pgrep -f "$pattern")
if [ -n "$left" ]; then
  echo "worker(s) $left outlived moacert after SIG$sig"
  kill -9 $left
  exit 1
fi
echo "moacert exited $rc after SIG$sig; no worker left"
