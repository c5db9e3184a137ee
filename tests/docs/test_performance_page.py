#!/usr/bin/env python3
"""scripts/performance-page.py on a small committed fixture: the page has a
table per op and per measure with its command, commit and machine, and keeps
the anchors other pages link to; and a planted malformed result (a field the
page reads, removed) is refused with the file and the field named, not
written as a page with a gap.

    test_performance_page.py SCRIPT FIXTURE_DIR WORK_DIR
"""
import json
import pathlib
import shutil
import subprocess
import sys

script, fixture, work = map(pathlib.Path, sys.argv[1:4])


def generate(results):
    return subprocess.run([sys.executable, str(script), str(results)], capture_output=True,
                          text=True)


def expect(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


good = generate(fixture)
expect(good.returncode == 0, f"the fixture builds a page (stderr: {good.stderr})")
page = good.stdout
for needle in [
        "### attention.fwd: kernel time",
        "### rmsnorm: kernel time",
        "| variant | time (ms) | GFLOP/s | GB/s | peak extra (MB) | torch time / variant time |",
        "| `cpu.flash` | 0.200 | 170.9 | 2.60 | 0.36 | 2.5 |",  # 0.5 ms / 0.2 ms
        "| `cpu.fused` | 4.000 | 5.0 | 20.00 | 0.00 | 5 |",
        "### rmsnorm: cpu.fused against ggml",
        "| variant | time (ms) | GFLOP/s | GB/s | time / `cpu.fused` time |",
        "| `plugin:libmoacert_ggml.so#rms_norm` | 8.000 | 2.5 | 10.00 | 2 |",
        "### oracle_bench",
        "| 120.5 ms | 100 | 0 | 53 |",
        "| rmsnorm | `cpu.fused` | holds | 0.03 | 0.40 | 0.33 | 0.02 | 1.71 | 2.96 |",
        "Command: `build/cli/moacert bench rmsnorm --variants cpu.fused,torch",
        "Commit `abc1234`, Test CPU, 2 cores",
        "load average 0.10 0.20 0.30 before",
        "## Sampled certification",  # anchor #sampled-certification
        "### Oracle memory",  # anchor #oracle-memory
        '<a id="simt"></a>',
        "(performance-history.md#planted-tiled-kernels)",
]:
    expect(needle in page, f"the page has {needle!r}")
# One table per op: each table's header row once per op file.
expect(page.count("| variant | time (ms) | GFLOP/s | GB/s | peak extra") == 2, "one kernel-time table per op")

# Planted: a result without the median time the table reads.
planted = work / "planted"
shutil.rmtree(planted, ignore_errors=True)
shutil.copytree(fixture, planted)
bad = planted / "bench" / "rmsnorm.json"
doc = json.loads(bad.read_text())
del doc["results"][1]["seconds"]
bad.write_text(json.dumps(doc))
refused = generate(planted)
expect(refused.returncode == 1, f"the planted result is refused (exit {refused.returncode})")
expect("rmsnorm.json: results[1]: no field 'seconds'" in refused.stderr,
       f"the refusal names the file and field (stderr: {refused.stderr!r})")
expect(refused.stdout == "", "no page is written from a malformed result")
print("performance-page.py: fixture page as expected; planted malformed result refused")
