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
# per output two histograms, and the equivalence bars; from its plot data,
# error against T and D with their growth fits (--shape ranges spread
# them), the error against the bound per element, and PyTorch's per
# element where it ran. 5 cases: from generation 7 seed 1's first 4 hold
# 2 distinct T among those with an error, one short of a fit (an envelope
# case along T, whose range here holds no threshold, is drawn small).
"$moacert" certify rmsnorm --variant cpu.fused --cases 5 --seed 1 --shape T=1..40,D=1..200 \
  --out "$work/plots" >/dev/null
torch_plot=$(grep -q '"vs_torch"' "$work/plots/certificate.json" && echo vs-torch || true)
/usr/bin/python3 "$here/browser_check.py" "$work/plots/report.html" "$screenshot" 4 \
  growth-T growth-D vs-bound $torch_plot
# The emulator's launches against the cost function (simt.rmsnorm).
"$moacert" certify rmsnorm --variant simt.rmsnorm --cases 1 --seed 1 --out "$work/simt" >/dev/null
/usr/bin/python3 "$here/browser_check.py" "$work/simt/report.html" - 1 launches
# moacert report --from: the same plots, drawn from the certificates alone.
"$moacert" report --from "$work/plots" "$work/simt" --out "$work/report" >/dev/null
/usr/bin/python3 "$here/browser_check.py" "$work/report/report.html" - 4 \
  growth-T growth-D vs-bound launches

# A plot drawn empty is caught: vs-bound's data series emptied of its marks.
mkdir -p "$work/planted"
/usr/bin/python3 - "$work/plots/report.html" "$work/planted/report.html" <<'PY'
import re, sys
html = open(sys.argv[1]).read()
start = html.index('<figure data-plot="vs-bound"')
end = html.index('</figure>', start)
figure = re.sub(r"<(use|path)\b[^>]*/>", "", html[start:end])
open(sys.argv[2], "w").write(html[:start] + figure + html[end:])
PY
rc=0
/usr/bin/python3 "$here/browser_check.py" "$work/planted/report.html" - 1 vs-bound \
  >"$work/planted.out" || rc=$?
[ $rc -eq 1 ] && grep -q "plot vs-bound is empty" "$work/planted.out" ||
  fail "an emptied plot was not caught (exit $rc): $(cat "$work/planted.out")"
echo "report_html_check: an emptied plot is caught: $(grep 'vs-bound' "$work/planted.out")"
