#!/bin/sh
# `moacert report`: the table from certificate folders (--from) and from
# its own runs, as Markdown, LaTeX booktabs (compiled when latexmk is
# present) and HTML; bad --from folders exit 2 with one line naming the
# file, and write nothing.
#   report_check.sh MOACERT WORK_DIR
set -eu
moacert=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "report_check: $*" >&2; exit 1; }

# Certificates to read: a summary of every rmsnorm variant, and one variant.
"$moacert" certify rmsnorm --cases 2 --seed 1 --out "$work/rmsnorm" >/dev/null 2>&1
"$moacert" certify attention.decode --variant cpu.split --cases 2 --seed 1 \
  --out "$work/decode" >/dev/null 2>&1

"$moacert" report --from "$work/rmsnorm" "$work/decode" --out "$work/table" >/dev/null
md="$work/table/report.md"
# One row per variant and output: every variant the summary lists, and
# cpu.split's output o.
for v in $(/usr/bin/python3 -c "import json,sys; print(' '.join(v['variant'] for v in json.load(open(sys.argv[1]))['variants']))" "$work/rmsnorm/certificate.json"); do
  grep -q "^| rmsnorm | $v | f32 | " "$md" || fail "no row of rmsnorm $v in $md"
done
grep -q "^| attention.decode | cpu.split | f32 | o | " "$md" || fail "no row of cpu.split in $md"
rows=$(grep -c "^| [a-z]" "$md")
expected=$(/usr/bin/python3 -c "
import json, pathlib, sys
s = json.load(open(sys.argv[1]))
n = sum(len(json.load(open(pathlib.Path(sys.argv[1]).parent / v['certificate']))['tensors']) for v in s['variants'])
print(n + len(json.load(open(sys.argv[2]))['tensors']) + 1)" "$work/rmsnorm/certificate.json" "$work/decode/certificate.json")
[ "$rows" -eq "$expected" ] || fail "$rows table lines (header included), expected $expected"
for rule in '\\toprule' '\\midrule' '\\bottomrule' 'cpu.split'; do
  grep -q -- "$rule" "$work/table/report.tex" || fail "report.tex lacks $rule"
done
grep -q "<td>cpu.split</td>" "$work/table/report.html" || fail "report.html lacks cpu.split"
if command -v latexmk >/dev/null 2>&1; then
  printf '%s\n' '\documentclass{article}\usepackage{booktabs}\begin{document}' \
    '\input{report.tex}' '\end{document}' >"$work/table/paper.tex"
  (cd "$work/table" && latexmk -pdf -interaction=nonstopmode paper.tex >/dev/null) ||
    fail "report.tex does not compile"
else
  echo "report_check: latexmk absent: report.tex not compiled"
fi

# bad_from NAME TEXT DIR: --from DIR exits 2, one line on stderr matching
# TEXT, and no output folder.
bad_from() {
  rc=0
  "$moacert" report --from "$3" --out "$work/out_$1" >/dev/null 2>"$work/$1.err" || rc=$?
  [ $rc -eq 2 ] || fail "$1: exit $rc, expected 2"
  [ "$(wc -l <"$work/$1.err")" -eq 1 ] || fail "$1: not one line on stderr: $(cat "$work/$1.err")"
  grep -q -- "$2" "$work/$1.err" || fail "$1: stderr '$(cat "$work/$1.err")' lacks '$2'"
  [ ! -e "$work/out_$1" ] || fail "$1: a refused report wrote $work/out_$1"
}
# The bad certificates lie under planted/, which the schema test skips (PLANTED).
bad=$work/planted
mkdir -p "$bad/empty" "$bad/newer" "$bad/corrupt" "$bad/no_tensors"
touch "$bad/PLANTED"
bad_from no_certificate "moacert: report: $bad/empty: no certificate.json" "$bad/empty"
sed 's/"schema": 1,/"schema": 2,/' "$work/decode/certificate.json" >"$bad/newer/certificate.json"
bad_from newer_schema \
  "$bad/newer/certificate.json: schema version 2 is newer than this moacert reads (1)" "$bad/newer"
head -c 200 "$work/decode/certificate.json" >"$bad/corrupt/certificate.json"
bad_from corrupt_json "$bad/corrupt/certificate.json: not JSON: " "$bad/corrupt"
/usr/bin/python3 -c "import json,sys; c=json.load(open(sys.argv[1])); del c['tensors']; print(json.dumps(c))" \
  "$work/decode/certificate.json" >"$bad/no_tensors/certificate.json"
bad_from missing_field "$bad/no_tensors/certificate.json: field \"tensors\" missing" "$bad/no_tensors"

# Its own runs: two variants of one op, PyTorch among them when built.
"$moacert" report --ops rmsnorm --variants cpu.dnf,cpu.fused --cases 1 --out "$work/run" >/dev/null 2>&1
for v in cpu.dnf cpu.fused; do
  [ -f "$work/run/certificates/rmsnorm/f32/$v/certificate.json" ] || fail "no certificate of $v"
  grep -q "^| rmsnorm | $v | f32 | " "$work/run/report.md" || fail "no row of $v in the run's table"
done
rc=0
"$moacert" report --ops rmsnorm --variants cpu.nope --out "$work/out_unknown" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] && [ ! -e "$work/out_unknown" ] || fail "an unknown variant: exit $rc, or a folder left"
echo "report_check: tables, LaTeX and every refusal as documented"
