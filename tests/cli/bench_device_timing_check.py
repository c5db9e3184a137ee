#!/usr/bin/env python3
"""bench_device_timing_check.py MOACERT: `moacert bench --json` times a
device backend's launches alone and its copies apart (docs/design.md,
`bench`), checked on the emulator's twin of a cuda.* variant (simt.fused_v1,
the same host glue as cuda.fused_v1 but for the clock) beside a host
variant timed call by call. Every figure asserted is one a wrong timing
path would change: the bytes copied are the op's tensors exactly (inputs
in, outputs out, no scratch, no second copy), the rates are the cost
function's counts over the median, and the launches of one call are listed
with the emulator's counts equal to the cost function's."""
import json
import subprocess
import sys

moacert = sys.argv[1]
B, H, N, M, D = 1, 2, 16, 24, 8
out = subprocess.run(
    [moacert, "bench", "attention.fwdbwd", "--variants", "simt.fused_v1,cpu.fused",
     "--shape", f"B={B},H={H},N={N},M={M},D={D}", "--warmup", "1", "--repeats", "3",
     "--threads", "2", "--json"], check=True, capture_output=True, text=True).stdout
results = {r["variant"]: r for r in json.loads(out)["results"]}
failures = []


def expect(what, ok):
    if not ok:
        failures.append(what)


f32 = 4
inputs = (B * H * N * D + 2 * B * H * M * D + B * H * N * D) * f32  # q, k, v, do
outputs = (B * H * N * D + B * H * N + B * H * N * D + 2 * B * H * M * D) * f32  # o lse dq dk dv

device = results["simt.fused_v1"]
expect(f"simt.fused_v1 timed {device['timed']!r}, not its launches",
       device["timed"].startswith("launches ("))
expect(f"copied {device.get('copy_to_device_bytes')} bytes to the device, not the inputs' {inputs}",
       device.get("copy_to_device_bytes") == inputs)
expect(f"copied {device.get('copy_from_device_bytes')} bytes back, not the outputs' {outputs}",
       device.get("copy_from_device_bytes") == outputs)
expect("a copy timed at 0 s or less",
       device.get("copy_to_device_seconds", 0) > 0 and device.get("copy_from_device_seconds", 0) > 0)
launches = device.get("launches", [])
expect(f"{len(launches)} launches listed, not fused_v1's 3 (the kernel, then dk and dv scaled)",
       len(launches) == 3)
for l in launches:
    expect(f"{l['kernel']}: {l['atomics']} atomics counted, {l['model_atomics']} modelled",
           l["atomics"] == l["model_atomics"])
    expect(f"{l['kernel']}: {l['bytes']} bytes counted, {l['model_bytes']} modelled",
           l["bytes"] == l["model_bytes"])
expect("no global loads counted in fused_v1's kernel", launches and launches[0]["loads"] > 0)

for r in results.values():
    for rate, count in (("flops_per_second", "cost_flops"), ("bytes_per_second", "cost_bytes")):
        expect(f"{r['variant']}: {rate} is not {count} / seconds",
               abs(r[rate] * r["seconds"] - r[count]) <= 1e-9 * r[count])
    expect(f"{r['variant']}: gflops is not flops_per_second / 1e9",
           abs(r["gflops"] * 1e9 - r["flops_per_second"]) <= 1e-9 * r["flops_per_second"])

host = results["cpu.fused"]
expect(f"cpu.fused timed {host['timed']!r}, not its call", host["timed"] == "call")
expect("cpu.fused reports copies", not any(key.startswith("copy_") for key in host))
expect("cpu.fused lists launches", "launches" not in host)

for f in failures:
    print("bench_device_timing:", f)
sys.exit(1 if failures else 0)
