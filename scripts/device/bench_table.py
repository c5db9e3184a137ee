#!/usr/bin/env python3
"""bench_table.py DIR: one table of device-check's bench results (DIR/*.json
from `moacert bench --json`, DIR/sdpa.json from sdpa.py): per variant the
median seconds of its launches alone, TFLOP/s and GB/s against its cost
function's counts, the copies apart, and PyTorch SDPA's seconds at the same
op, shape and dtype with its ratio to each variant (the flash backend's,
where sdpa.py pinned each backend in turn; each backend's time is listed)."""
import json
import pathlib
import sys

folder = pathlib.Path(sys.argv[1])
sdpa = {}
try:
    meta = json.loads((folder / "sdpa.json").read_text())
    print(f"PyTorch {meta['torch']} on {meta['device']}")
    for r in meta["results"]:
        if "seconds" not in r:
            print(f"  SDPA {r['op']} backend {r.get('backend')}: {r.get('error')}")
            continue
        if "backend" in r:
            print(f"  SDPA {r['op']} {r['shape']} {r['dtype']} backend {r['backend']}: "
                  f"{r['seconds']:.4f} s")
        # the ratio is against the default choice, or against the flash
        # backend where the backends were pinned one by one
        if "backend" not in r or r["backend"] == "flash":
            sdpa[(r["op"], r["shape"], r["dtype"])] = r["seconds"]
except (OSError, ValueError, KeyError):
    print("PyTorch SDPA: no result (see sdpa.log)")

print(f"{'op':<17} {'dtype':<5} {'variant':<16} {'seconds':>9} {'TFLOP/s':>8} {'GB/s':>8} "
      f"{'copy in s':>9} {'copy out s':>10} {'sdpa s':>8} {'sdpa/this':>9}")
for path in sorted(folder.glob("*.json")):
    if path.name == "sdpa.json":
        continue
    try:
        bench = json.loads(path.read_text())
    except ValueError:
        print(f"{path.name}: no result")
        continue
    ref = sdpa.get((bench["op"], bench["shape"], bench["dtype"]))
    for r in bench["results"]:
        ratio = f"{ref / r['seconds']:.2f}x" if ref else "-"
        print(f"{bench['op']:<17} {bench['dtype']:<5} {r['variant']:<16} {r['seconds']:>9.4f} "
              f"{r['flops_per_second'] / 1e12:>8.2f} {r['bytes_per_second'] / 1e9:>8.1f} "
              f"{r.get('copy_to_device_seconds', 0):>9.4f} {r.get('copy_from_device_seconds', 0):>10.4f} "
              f"{(f'{ref:.4f}' if ref else '-'):>8} {ratio:>9}")
