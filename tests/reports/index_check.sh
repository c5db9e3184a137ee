#!/bin/sh
# One page for the whole run (scripts/certify-all.sh, `moacert report
# --index`): every variant a row with its verdict and a link to its
# certificate, every link resolving; a planted failing plugin's certificate
# shows as failing, on the page and in index.md; the page renders in
# headless Chromium with its histograms drawn (browser_check.py; exit 77,
# a skip, without chromium, once every other check has run).
#   index_check.sh MOACERT SOURCE_DIR FAULTY_PLUGIN WORK_DIR SCREENSHOT.png
set -eu
moacert=$1 source=$2 faulty=$3 work=$4 screenshot=$5
rm -rf "$work"
mkdir -p "$work"
fail() { echo "index_check: $*" >&2; exit 1; }

# The main job on one op, one case each.
OPS=rmsnorm CASES=1 MOACERT=$moacert bash "$source/scripts/certify-all.sh" "$work/all" \
  >"$work/all.log" 2>&1 || fail "certify-all exited $?: $(tail -5 "$work/all.log")"
[ -f "$work/all/index.html" ] && [ -f "$work/all/index.md" ] || fail "no index.html or index.md"
variants=$(/usr/bin/python3 -c "import json,sys; print(' '.join(v['variant'] for v in json.load(open(sys.argv[1]))['variants']))" \
  "$work/all/rmsnorm/certificate.json")
for v in $variants; do
  grep -q "^| rmsnorm | \[$v\](rmsnorm/$v/certificate.md) | f32 | holds | " "$work/all/index.md" ||
    fail "no row of rmsnorm $v holding in index.md"
  grep -q "<tr data-verdict=\"holds\"><td>rmsnorm</td><td><a href=\"rmsnorm/$v/report.html\">$v</a>" \
    "$work/all/index.html" || fail "no row of rmsnorm $v holding in index.html"
done
grep -q '^\*\*Verdict: holds\*\*' "$work/all/index.md" || fail "index.md's verdict is not holds"

# Every link on the page leads to a file.
links() {
  /usr/bin/python3 - "$1" <<'PY'
import pathlib, re, sys
page = pathlib.Path(sys.argv[1])
hrefs = re.findall(r'href="([^"]+)"', page.read_text())
missing = [h for h in hrefs if not (page.parent / h).is_file()]
print(f"{len(hrefs)} links, missing: {' '.join(missing)}" if missing else f"{len(hrefs)} links")
sys.exit(1 if missing or not hrefs else 0)
PY
}
links "$work/all/index.html" || fail "a link on the page leads nowhere"

# A failing certificate (the planted plugin that forgets the normalisation)
# beside them: failing in its row, the verdict and the failures.
rc=0
"$moacert" certify rmsnorm --plugin "$faulty" --cases 1 --seed 7 --out "$work/all/faulty" \
  >"$work/faulty.log" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "the faulty plugin's certify exited $rc, expected 1"
"$moacert" report --index --from "$work/all/rmsnorm" "$work/all/faulty" --out "$work/all" \
  >/dev/null || fail "report --index failed"
grep -q "^| rmsnorm | \[plugin:[^]]*\](faulty/certificate.md) | f32 | FAILS | " "$work/all/index.md" ||
  fail "the failing plugin is not a FAILS row in index.md"
grep -q '^\*\*Verdict: FAILS\*\*: [0-9]* certificates, [0-9]* hold, 1 fail' "$work/all/index.md" ||
  fail "index.md's verdict does not say one fails"
grep -q '<tr data-verdict="fails"><td>rmsnorm</td><td><a href="faulty/report.html">plugin:.*<td class="fails">FAILS</td>' \
  "$work/all/index.html" || fail "the failing plugin's row in index.html does not fail"
grep -q '<p class="fails"><strong>Verdict: FAILS' "$work/all/index.html" ||
  fail "index.html's verdict does not fail"
grep -q '<li class="fails">rmsnorm plugin:.*moacert reproduce ' "$work/all/index.html" ||
  fail "index.html lists no failure with its reproduce line"
[ "$(grep -c 'data-verdict="holds"' "$work/all/index.html")" -eq "$(echo $variants | wc -w)" ] ||
  fail "the holding rows changed beside the failing one"
links "$work/all/index.html" || fail "a link on the page with the failure leads nowhere"

# --index reads certificates: without --from, one line and exit 2.
rc=0
"$moacert" report --index --out "$work/none" >/dev/null 2>"$work/none.err" || rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$work/none.err")" -eq 1 ] && [ ! -e "$work/none" ] ||
  fail "--index without --from: exit $rc: $(cat "$work/none.err")"

# In a browser: renders, no console message, every histogram drawn.
/usr/bin/python3 "$source/tests/reports/browser_check.py" "$work/all/index.html" "$screenshot" 1
echo "index_check: one page for the run, a failing certificate failing on it"
