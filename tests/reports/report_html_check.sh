#!/bin/sh
# report.html beside the certificate: rendered in headless Chromium with
# every plot drawn (browser_check.py; exit 77, a skip, without chromium),
# and, with no gnuplot on the PATH, written without plots, saying so in the
# page and on stderr, the run's verdict unchanged.
#   report_html_check.sh MOACERT WORK_DIR SCREENSHOT.png
set -eu
moacert=$1 work=$2 screenshot=$3
here=$(dirname "$0")
rm -rf "$work"
mkdir -p "$work"
fail() { echo "report_html_check: $*" >&2; exit 1; }

# Without gnuplot (PATH holds nothing; popen's /bin/sh needs no PATH).
PATH=/nonexistent "$moacert" certify rmsnorm --variant cpu.dnf --cases 1 --seed 1 \
  --out "$work/no_gnuplot" >/dev/null 2>"$work/no_gnuplot.err" || fail "certify without gnuplot failed"
grep -q "gnuplot is not on the PATH: $work/no_gnuplot/report.html has no plots" "$work/no_gnuplot.err" ||
  fail "no message on stderr about the missing plots: $(cat "$work/no_gnuplot.err")"
grep -q "This report has no plots: gnuplot is not on the PATH" "$work/no_gnuplot/report.html" ||
  fail "the page does not say it has no plots"
! grep -q "<svg" "$work/no_gnuplot/report.html" || fail "a page without gnuplot holds a plot"

# With gnuplot: rmsnorm's cpu.fused beside PyTorch (where the build has it):
# per output two histograms, and the equivalence bars.
"$moacert" certify rmsnorm --variant cpu.fused --cases 3 --seed 1 --out "$work/plots" >/dev/null
/usr/bin/python3 "$here/browser_check.py" "$work/plots/report.html" "$screenshot" 2
