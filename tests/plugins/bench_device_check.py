#!/usr/bin/python3
"""Reads `moacert bench --json` of a device plugin on stdin (attention.fwd,
f32, B=1 H=2 N=M=64 D=64; --repeats 3) and checks what docs/design.md's
bench section says of a device kernel: its launches timed alone by events,
one sample per repeat, each input's and output's data copied once (their
bytes exactly the tensors'), and FLOP/s and bytes/s the cost's counts over
the median launch time. Prints "device bench: consistent" or what is not.
"""
import json
import math
import sys

bench = json.load(sys.stdin)
r = bench["results"][0]
B, H, N, M, D, f32 = 1, 2, 64, 64, 64, 4
expect = {
    "timed": "launches (CUDA events)",
    "copy_to_device_bytes": float((B * H * N * D + 2 * B * H * M * D) * f32),  # q, k, v
    "copy_from_device_bytes": float((B * H * N * D + B * H * N) * f32),  # o, lse
}
problems = [f"{k}: {r.get(k)!r}, expected {v!r}" for k, v in expect.items() if r.get(k) != v]
if not r["seconds"] > 0:
    problems.append(f"seconds {r['seconds']} not positive")
for k in ("copy_to_device_seconds", "copy_from_device_seconds"):
    if not r.get(k, -1) > 0:
        problems.append(f"{k}: {r.get(k)!r}, not positive")
for rate, count in (("flops_per_second", "cost_flops"), ("bytes_per_second", "cost_bytes")):
    if not math.isclose(r[rate], r[count] / r["seconds"], rel_tol=1e-9):
        problems.append(f"{rate} {r[rate]} is not {count} / seconds")
print("\n".join(problems) if problems else "device bench: consistent")
sys.exit(1 if problems else 0)
