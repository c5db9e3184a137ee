#!/usr/bin/env python3
"""Build docs/performance.md from one run of scripts/performance.sh.

    performance-page.py RESULTS_DIR [-o docs/performance.md]

RESULTS_DIR holds what scripts/performance.sh saved (each result beside a
.cmd file with the exact command that produced it):

    run.json               commit, machine (CPU model, cores), date, load averages
    bench/*.json           `moacert bench OP --json`: one op, its variants and torch
    gbench/*.json          a Google Benchmark program's --benchmark_format=json
    sampled/*.txt          sampled_certify_bench's phase timings

Standard library only. A result that does not have the fields the page reads
is an error (exit 1 naming the file and the field), never a silent gap.
"""
import argparse
import json
import pathlib
import re
import sys


class BadResult(Exception):
    pass


def field(obj, key, where):
    if not isinstance(obj, dict) or key not in obj:
        raise BadResult(f"{where}: no field '{key}'")
    return obj[key]


def number(obj, key, where):
    v = field(obj, key, where)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadResult(f"{where}: field '{key}' is not a number")
    return float(v)


def command_of(path):
    cmd = path.with_suffix(".cmd")
    if not cmd.is_file():
        raise BadResult(f"{path}: no {cmd.name} with its command")
    return cmd.read_text().strip()


def load_json(path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BadResult(f"{path}: not JSON ({e})")


def provenance(command, run):
    return [
        "",
        f"Command: `{command}`  ",
        f"Commit `{run['commit']}`, {run['machine']}, {run['date']}, "
        f"load average {run['load_before']} before and {run['load_after']} after the run.",
        "",
    ]


def bench_tables(paths, run):
    """One table per op: each variant's median time, rates and its ratio to torch."""
    out = []
    for path in paths:
        where = str(path)
        doc = load_json(path)
        op = field(doc, "op", where)
        results = field(doc, "results", where)
        if not isinstance(results, list) or not results:
            raise BadResult(f"{where}: 'results' is not a non-empty list")
        rows = []
        for i, r in enumerate(results):
            w = f"{where}: results[{i}]"
            rows.append((field(r, "variant", w), number(r, "seconds", w), number(r, "gflops", w),
                         number(r, "gbps", w), number(r, "peak_bytes", w)))
        torch = next((s for name, s, *_ in rows if name == "torch"), None)
        out += [f"### {op}: kernel time", ""]
        out += [f"{field(doc, 'dtype', where)}, {field(doc, 'shape', where)}"
                f"{', causal' if doc.get('causal') else ''}, {field(doc, 'threads', where)} threads; "
                "median of the repeats."]
        out += provenance(command_of(path), run)
        out += ["| variant | time (ms) | GFLOP/s | GB/s | peak extra (MB) | torch time / variant time |",
                "|---|---:|---:|---:|---:|---:|"]
        for name, s, gf, gb, peak in rows:
            ratio = f"{torch / s:.3g}" if torch else "n/a"
            out.append(f"| `{name}` | {s * 1e3:.3f} | {gf:.1f} | {gb:.2f} | {peak / 1e6:.2f} | {ratio} |")
        out.append("")
    return out


def deployed_tables(paths, run):
    """One table per run of a built-in variant against a deployed library's kernel
    (adapters/): each one's median time, rates, and its time over the built-in's."""
    out = []
    for path in paths:
        where = str(path)
        doc = load_json(path)
        op = field(doc, "op", where)
        results = field(doc, "results", where)
        if not isinstance(results, list) or len(results) < 2:
            raise BadResult(f"{where}: 'results' is not a list of a variant and a plugin")
        rows = []
        for i, r in enumerate(results):
            w = f"{where}: results[{i}]"
            rows.append((field(r, "variant", w), number(r, "seconds", w), number(r, "gflops", w),
                         number(r, "gbps", w)))
        builtin, base = rows[0][0], rows[0][1]
        library = rows[-1][0].split("#")[0].replace("plugin:libmoacert_", "").replace(".so", "")
        out += [f"### {op}: {builtin} against {library}", ""]
        out += [f"{field(doc, 'dtype', where)}, {field(doc, 'shape', where)}"
                f"{', causal' if doc.get('causal') else ''}, {field(doc, 'threads', where)} threads "
                "(the adapter's too); median of the repeats."]
        out += provenance(command_of(path), run)
        out += [f"| variant | time (ms) | GFLOP/s | GB/s | time / `{builtin}` time |",
                "|---|---:|---:|---:|---:|"]
        for name, sec, gf, gb in rows:
            out.append(f"| `{name}` | {sec * 1e3:.3f} | {gf:.1f} | {gb:.2f} | {sec / base:.3g} |")
        out.append("")
    return out


def gbench_tables(paths, run):
    """One table per Google Benchmark program: each benchmark's real time and counters."""
    out = []
    skip = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
            "iterations", "real_time", "cpu_time", "time_unit", "label", "family_index",
            "per_family_instance_index", "aggregate_name", "aggregate_unit", "error_occurred",
            "error_message"}
    for path in paths:
        where = str(path)
        doc = load_json(path)
        ctx = field(doc, "context", where)
        program = pathlib.Path(str(field(ctx, "executable", f"{where}: context"))).name
        benchmarks = field(doc, "benchmarks", where)
        if not isinstance(benchmarks, list) or not benchmarks:
            raise BadResult(f"{where}: 'benchmarks' is not a non-empty list")
        counters = []
        for b in benchmarks:
            for k, v in b.items():
                if k not in skip and isinstance(v, (int, float)) and k not in counters:
                    counters.append(k)
        out += [f"### {program}"]
        out += provenance(command_of(path), run)
        out += ["| benchmark | label | real time | " + " | ".join(counters) + " |",
                "|---|---|---:|" + "---:|" * len(counters)]
        for i, b in enumerate(benchmarks):
            w = f"{where}: benchmarks[{i}]"
            t = number(b, "real_time", w)
            unit = field(b, "time_unit", w)
            cells = [f"{b[k]:.4g}" if k in b else "" for k in counters]
            out.append(f"| `{field(b, 'name', w)}` | {b.get('label', '')} | {t:.4g} {unit} | "
                       + " | ".join(cells) + " |")
        out.append("")
    return out


# "OP VARIANT CASE: holds", the case's description running over several lines.
SAMPLED_HEAD = re.compile(r"\A(\S+) (\S+) .*?: (holds|FAILS[^\n]*)$", re.M | re.S)
SAMPLED_SECONDS = re.compile(
    r"^seconds: generation ([\d.]+), bounds ([\d.]+), oracle ([\d.]+), kernel ([\d.]+), "
    r"judge ([\d.]+); total ([\d.]+)$", re.M)


def sampled_table(paths, run):
    """One table for sampled certification: the phases of one case per op and variant."""
    if not paths:
        return []
    out = ["| op | variant | verdict | generation | bounds | oracle | kernel | judge | total (s) |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    commands = []
    for path in paths:
        text = path.read_text()
        head, secs = SAMPLED_HEAD.search(text), SAMPLED_SECONDS.search(text)
        if not head or not secs:
            raise BadResult(f"{path}: no 'OP VARIANT ...: verdict' or 'seconds:' line")
        verdict = "holds" if head.group(3) == "holds" else "FAILS"
        out.append(f"| {head.group(1)} | `{head.group(2)}` | {verdict} | "
                   + " | ".join(secs.groups()) + " |")
        commands.append(command_of(path))
    intro = ["Commands: " + "; ".join(f"`{c}`" for c in commands) + "  ",
             f"Commit `{run['commit']}`, {run['machine']}, {run['date']}, load average "
             f"{run['load_before']} before and {run['load_after']} after the run.", ""]
    return intro + out + [""]


# Sections of the dated history that other pages link to by anchor: each
# keeps its anchor on this page (an HTML id, which every renderer keeps) and
# links to its heading in the history: (anchors here, heading there).
HISTORY_SECTIONS = [
    ([], "The CPU kernels against the issue's targets (quiet machine, 3 December 2026)"),
    ([], "Oracle"),
    ([], "Attention forward"),
    ([], "Decode"),
    ([], "Backward, fused, RMSNorm and MLP kernels: attention.bwd, attention.fwdbwd, rmsnorm, "
         "mlp.swiglu"),
    ([], "The per-buffer counters' cost (issue #16, the traffic law)"),
    ([], "CUDA kernels (issue #16)"),
    (["oracle-memory"], "Oracle memory {#oracle-memory}"),
    (["simt-emulator", "simt"], "SIMT emulator (issue #15)"),
    (["simt-variants"], "The emulator against the same source built natively and the CPU ONF "
                        "(issue #51, item 1, 7 December 2026)"),
    (["deployment-scale-cases"], "Deployment-scale cases"),
    (["mpi-ranks-and-threads"], "MPI: ranks and threads"),
    (["regime-coverage"], "Regime coverage"),
    (["planted-tiled-kernels"], "Planted tiled kernels"),
    ([], "Workers (issue #28)"),
    ([], "The backward at scale (issue #29, item 3)"),
    ([], "Tensor-core ONFs on the emulator (issue #30)"),
    ([], "Certify's cases on both cores (issue #51)"),
    ([], "Deployment-scale certify, case by case (issue #51, item 5, 8 December 2026)"),
    ([], "The arithmetic check (issue #46)"),
]


# The records that followed a section's first, each a clause continuing its
# "The dated record: [...]" sentence (the first line starts with the
# punctuation that follows the link).
LATER_RECORDS = {
    "Deployment-scale certify, case by case (issue #51, item 5, 8 December 2026)": [
        ':',
        '`sampled_certify_bench ... certify` times the cases `certify --shape` judges,',
        'phase by phase, and the phases now sum to a case. At B=1, H=8, N=M=4096,',
        'D=128, on the shared machine at load 4.6 to 12.3: attention.fwdbwd',
        '`cpu.fused`, 8 cases in 568.1 s (bounds 189.0, oracle 229.7, torch 70.3,',
        'determinism 49.0, kernel 22.9, judge 4.3, generation 1.9), cases 32.8 to',
        '140.0 s, four within 60 s; attention.bwd `cpu.flash_bwd`, cases 1 to 3 in',
        '175.2, 103.4 and 354.7 s at load 11 to 12 (98.1, 55.1 and 101.8 s at load',
        "4.5 to 6.5 on the next build), and the curated `ties` case's generation",
        "still running at 931 s: the backward's o and lse, the oracle's forward",
        'evaluated whole, climb the Ziv loop to 1024 bits on exact midpoints',
        '(not fixed here). The determinism check now makes two runs, not three.',
    ],
    "Certify's cases on both cores (issue #51)": [
        ':',
        '`certify attention.bwd --variant cpu.flash_bwd --cases 400 --seed 1`',
        'in 19.17 s with `--jobs 1` and 18.11 s with `--jobs 2` (1.06 times), one',
        "pair on bd9c937's build, the shared 2-core machine at load 9.4 to 10.2:",
        'noisy, and the emulated variants run one case at a time whatever `--jobs`.',
    ],
    "Planted tiled kernels": [
        ',',
        "and for the kernels at the deployment envelope and certify-all's cost with",
        'generation 5: [Planted at the envelope](performance-history.md#planted-at-the-envelope-issue-29).',
    ],
    "The backward at scale (issue #29, item 3)": [
        ',',
        'the figures at 4096 (one sampled attention.bwd at B=1, H=8, N=M=4096,',
        'D=128 in 51.5 s, attention.fwdbwd in 40.3 s, decode at L=131072 in 9.2 s):',
        '[Allowances and blocked sums](performance-history.md#allowances-and-blocked-sums-issue-29-item-3-5-december-2026);',
        'and the latest, with query rows in blocks (another machine: at 4096, bwd',
        '70.1 -> 45.3 s and fwdbwd 52.4 -> 37.1 s, one pair each; at 16384,',
        "**attention.fwdbwd in 449.8 s**, within the issue's 10 minutes, and",
        '**attention.bwd in 645.3 s**, over them):',
        '[Query rows in blocks](performance-history.md#query-rows-in-blocks-issue-29-item-3-5-december-2026);',
        "with the generation's forward kept for the backward's key rows,",
        '**attention.bwd at 16384 in 493.8 s** (oracle 207 -> 71 s):',
        "[The generation's forward kept](performance-history.md#the-generations-forward-kept-issue-29-item-3-5-december-2026).",
        'mlp.swiglu with its weights streamed: T=16, Dm=16384, F=53248 in',
        '114.9 s, at T=16, Dm=4096, F=14336 in 6.0 s (oracle 848 s before):',
        "[mlp.swiglu's weights streamed](performance-history.md#mlpswiglus-weights-streamed-issue-29-item-3-6-december-2026);",
        'with huge pages, rows drawn on every thread and the classifier blocked,',
        "**T=16, Dm=16384, F=53248 in 41.6-43.5 s**, within the issue's 60 s, and",
        'certify-all against the build before the issue:',
        '[mlp.swiglu at full width within 60 s](performance-history.md#mlpswiglu-at-full-width-within-60-s-the-budget-by-each-runs-copies-issue-29-item-3-6-december-2026);',
        'the memory statement against the measured peak with the oracle and the',
        'kernels counted as phases (bwd at 4096 with PyTorch beside: 3.0 GiB',
        'stated, 2.84 GiB measured) and the sampled dQ rows without their dropped',
        'key rows (at 16384, **attention.bwd in 566.3 s**, its oracle 28.5 s, and',
        '**attention.fwdbwd in 400.9 s**):',
        '[The oracle and the kernels counted as phases](performance-history.md#the-oracle-and-the-kernels-counted-as-phases-issue-29-item-3-6-december-2026);',
        "with the MPFI pass streaming attention's rows, decode at L=131072 stated",
        '2.1 GiB (was 5.4) against its 1.56 GiB peak, bwd at 4096 1.57 GiB (was 2.0):',
        "[Attention's rows streamed at the MPFI pass](performance-history.md#attentions-rows-streamed-at-the-mpfi-pass-issue-29-item-3-6-december-2026);",
        "and with rmsnorm's streamed too, rmsnorm at T=16, D=16384 stated 34.6 MiB",
        '(was 65.1) against its 34.6 MiB peak, 9.4 of it the program itself:',
        "[rmsnorm's rows streamed at the MPFI pass](performance-history.md#rmsnorms-rows-streamed-at-the-mpfi-pass-issue-29-item-3-6-december-2026).",
    ],
}


def github_slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def page(results):
    run = load_json(results / "run.json")
    for k in ("commit", "machine", "date", "load_before", "load_after"):
        field(run, k, str(results / "run.json"))
    bench = sorted((results / "bench").glob("*.json"))
    gbench = sorted((results / "gbench").glob("*.json"))
    sampled = sorted((results / "sampled").glob("*.txt"))
    if not bench:
        raise BadResult(f"{results}/bench: no moacert bench results")
    lines = [
        "# Performance",
        "",
        "<!-- Generated by scripts/performance-page.py; edit the script, not this page. -->",
        "",
        "The current figures, all from one run of `scripts/performance.sh BUILD_DIR`,",
        "which runs `moacert bench --json` and the Google Benchmark programs of `bench/`",
        "at a small fixed set of sizes, keeps their raw output under `perf-results/`",
        "(not committed) and calls `scripts/performance-page.py` to write this page.",
        "Regenerate it with",
        "",
        "    scripts/performance.sh build",
        "",
        "The runs are short and the machine may be shared, so read the figures as",
        "ratios between variants measured in the same run, not as absolute speeds;",
        "each table gives its command, commit, machine and load average. The dated",
        "runs (targets, method, larger problems, one-off experiments) are in",
        "[performance-history.md](performance-history.md).",
        "",
        "## Kernel time per variant against LibTorch",
        "",
        "`moacert bench`: each variant of one op on one problem, warm-up then the",
        "median of the repeats; rates from the variants' cost functions.",
        "",
    ]
    lines += bench_tables(bench, run)
    deployed = sorted((results / "deployed").glob("*.json"))
    lines += ["## Against the deployed libraries", "",
              "`moacert bench` of each built-in CPU variant beside the kernel a user would",
              "pick instead, llama.cpp's ggml or ONNX Runtime through its adapter",
              "(`adapters/`, [deployed-kernels.md](deployed-kernels.md)), on the same",
              "problem (f32; decode with an f16 KV cache as llama.cpp runs it). A plugin",
              "is timed in its worker, around its call. The ggml adapter's time includes",
              "copying the tensors into ggml's and the result out (into memory kept",
              "across calls); ONNX Runtime's reads moacert's tensors in place and writes",
              "into them, and includes writing the model (the session is kept). The",
              "adapters compute no lse (their attention kernels declare `outputs = \"o\"`).",
              "The adapters run `MOACERT_ADAPTER_THREADS` threads, set to `--threads`.", ""]
    if deployed:
        lines += deployed_tables(deployed, run)
    else:
        lines += ["Not measured in this run (no adapters in the build: "
                  "`bash scripts/setup-deployed.sh`).", ""]
    lines += ["## Oracle time and the other benchmark programs", ""]
    if gbench:
        lines += ["Google Benchmark programs of `bench/` (`--benchmark_format=json`).", ""]
        lines += gbench_tables(gbench, run)
    else:
        lines += ["Not measured in this run.", ""]
    lines += ["## Sampled certification", ""]
    if sampled:
        lines += ["`sampled_certify_bench`: one deployment-scale case certified the way",
                  "`certify` judges it, timed phase by phase (seconds).", ""]
        lines += sampled_table(sampled, run)
        lines += ["The dated runs: [performance-history.md#sampled-certification]"
                  "(performance-history.md#sampled-certification).", ""]
    else:
        lines += ["Not measured in this run.", ""]
    lines += ["## Measured once", "",
              "Targets, method, larger problems and one-off experiments, measured with their",
              "date in the history; the sections below keep the names and anchors that other",
              "pages and comments cite, each pointing at its record.", ""]
    for anchors, heading in HISTORY_SECTIONS:
        title = re.sub(r" [({].*$", "", heading)
        slug = github_slug(heading)
        # The heading keeps the first anchor; other names get an HTML id.
        ids = [a for a in anchors if a != github_slug(title)]
        lines += ([" ".join(f'<a id="{a}"></a>' for a in ids), ""] if ids else [])
        record = f"The dated record: [{heading}](performance-history.md#{slug})"
        later = LATER_RECORDS.get(heading, ["."])
        lines += [f"### {title}", "", record + later[0], *later[1:], ""]
    return "\n".join(lines).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=pathlib.Path)
    ap.add_argument("-o", "--output", type=pathlib.Path)
    a = ap.parse_args()
    try:
        text = page(a.results)
    except (BadResult, OSError) as e:
        print(f"performance-page.py: {e}", file=sys.stderr)
        return 1
    if a.output:
        a.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
