#!/usr/bin/env python3
"""sdpa.py OUT.json: PyTorch's own CUDA scaled_dot_product_attention at
device-check's bench shapes, timed as `moacert bench` times a cuda.*
variant (CUDA events around the kernels alone, inputs resident, 2 warm-up
calls, the median of 5): forward and backward at B=2, H=8, N=M=8192, D=64
(beside attention.fwdbwd's fused_*), the backward alone at N=M=4096 (beside
attention.bwd's pair), f32 and bf16, no mask, scale 1/sqrt(D) as moacert's.
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F


def timed(call, warmup=2, repeats=5):
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(samples), samples


def tensors(n, dtype):
    return [torch.rand(2, 8, n, 64, device="cuda", dtype=dtype) * 2 - 1
            for _ in range(4)]


results = []
for dtype in (torch.float32, torch.bfloat16):
    name = str(dtype).replace("torch.", "").replace("float32", "f32").replace("bfloat16", "bf16")
    q, k, v, do = (t.detach().requires_grad_() for t in tensors(8192, dtype))

    def fwdbwd():
        o = F.scaled_dot_product_attention(q, k, v)
        torch.autograd.grad(o, (q, k, v), do)

    seconds, samples = timed(fwdbwd)
    results.append({"op": "attention.fwdbwd", "shape": "B=2,H=8,Hkv=8,N=8192,M=8192,D=64",
                    "dtype": name, "seconds": seconds, "samples": samples})
    del q, k, v, do
    q, k, v, do = (t.detach().requires_grad_() for t in tensors(4096, dtype))
    o = F.scaled_dot_product_attention(q, k, v)
    seconds, samples = timed(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
    results.append({"op": "attention.bwd", "shape": "B=2,H=8,Hkv=8,N=4096,M=4096,D=64",
                    "dtype": name, "seconds": seconds, "samples": samples})
    del q, k, v, do, o
    torch.cuda.empty_cache()

meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "timed": "CUDA events around the calls, inputs resident", "results": results}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
print(json.dumps(meta))
