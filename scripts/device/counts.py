#!/usr/bin/env python3
"""counts.py RAW: each cuda.* launch's atomics and global accesses as Nsight
Compute counted them on the GPU (RAW/ncu/cuda.V.csv: the thread-level,
instruction-patched sass__inst_executed_global_* metrics, one per thread and
executed instruction), beside the host emulator's count of the same launch
of its simt.* twin and the cost function's model of it (RAW/counts/simt.V.json,
`moacert bench --json`'s "launches"), launch by launch in order.

Atomics on the GPU are the atomic and the reduction instructions together
(an atomicAdd whose result is unused compiles to a RED). Exit 1 when any
count differs, so that device-check's status says so; the table says which.
"""
import csv
import json
import pathlib
import sys

raw = pathlib.Path(sys.argv[1])
METRICS = {
    "sass__inst_executed_global_atomics": "atomics",
    "sass__inst_executed_global_reductions": "reductions",
    "sass__inst_executed_global_loads": "loads",
    "sass__inst_executed_global_stores": "stores",
}


def number(text):
    return float(text.replace(",", "")) if text not in ("", "n/a") else float("nan")


def ncu_launches(path):
    """[(kernel name, {metric: value})] in launch order, from ncu --csv."""
    lines = path.read_text(errors="replace").splitlines()
    header = next((k for k, l in enumerate(lines) if l.startswith('"ID"')), None)
    if header is None:
        return []
    launches = {}
    for row in csv.DictReader(lines[header:]):
        if row.get("Metric Name") not in METRICS:
            continue
        kernel, values = launches.setdefault(int(row["ID"]), (row["Kernel Name"], {}))
        values[METRICS[row["Metric Name"]]] = number(row["Metric Value"])
    return [launches[k] for k in sorted(launches)]


differ = 0
rows = []
variants = [l.split() for l in (raw / "variants.txt").read_text().splitlines() if l.strip()]
for op, v in variants:
    twin = "simt." + v.split(".", 1)[1]
    try:
        emulated = json.loads((raw / "counts" / f"{twin}.json").read_text())["results"][0]["launches"]
    except (OSError, ValueError, KeyError, IndexError):
        print(f"{v}: no emulator count of {twin}")
        differ = 1
        continue
    csv_path = raw / "ncu" / f"{v}.csv"
    hardware = ncu_launches(csv_path) if csv_path.exists() else []
    if len(hardware) != len(emulated):
        print(f"{v}: ncu profiled {len(hardware)} launches, the emulator counted {len(emulated)}")
        differ = 1
    for k, (e, (kernel, hw)) in enumerate(zip(emulated, hardware)):
        hw_atomics = hw.get("atomics", 0) + hw.get("reductions", 0)
        same = {
            "atomics": hw_atomics == e["atomics"] == e["model_atomics"],
            "loads": hw.get("loads") == e["loads"],
            "stores": hw.get("stores") == e["stores"],
        }
        if not all(same.values()):
            differ = 1
        rows.append((v, k, kernel.split("(")[0][:40], hw_atomics, e["atomics"], e["model_atomics"],
                     hw.get("loads", float("nan")), e["loads"], hw.get("stores", float("nan")),
                     e["stores"], " ".join(n for n, ok in same.items() if not ok) or "equal"))

print(f"{'variant':<16} {'#':>2} {'kernel (ncu)':<40} {'atomics gpu/emu/model':>32} "
      f"{'loads gpu/emu':>24} {'stores gpu/emu':>24}  differs")
for v, k, kernel, ha, ea, ma, hl, el, hs, es, verdict in rows:
    print(f"{v:<16} {k:>2} {kernel:<40} {f'{ha:.0f}/{ea:.0f}/{ma:.0f}':>32} "
          f"{f'{hl:.0f}/{el:.0f}':>24} {f'{hs:.0f}/{es:.0f}':>24}  {verdict}")
print("counts: " + ("some differ (above)" if differ else "every launch equal on the GPU, "
                    "in the emulator and in the cost function"))
sys.exit(differ)
