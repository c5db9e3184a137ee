#!/usr/bin/env python3
"""sdpa.py OUT.json: PyTorch's own CUDA scaled_dot_product_attention at
device-check's bench shapes, timed as `moacert bench` times a cuda.*
variant (CUDA events around the kernels alone, inputs resident, 2 warm-up
calls, the median of 5): forward and backward at B=2, H=8, N=M=8192, D=64
(beside attention.fwdbwd's fused_*), the backward alone at N=M=4096 (beside
attention.bwd's pair), f32 and bf16, no mask, scale 1/sqrt(D) as moacert's;
and the forward alone at B=2, H=16, N=M=4096, D=128 in bf16 (beside
flash_tc) by each of PyTorch's attention backends the device has (flash,
memory-efficient, cuDNN, math), each pinned in turn.
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


def tensors(n, dtype, heads=8, d=64):
    return [torch.rand(2, heads, n, d, device="cuda", dtype=dtype) * 2 - 1
            for _ in range(4)]


def backends():
    """(name, context manager pinning SDPA to that backend) for each
    backend this PyTorch can pin: torch.nn.attention.sdpa_kernel from 2.3,
    else torch.backends.cuda.sdp_kernel's flags."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        names = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
        return [(n, lambda b=getattr(SDPBackend, e): sdpa_kernel(b))
                for n, e in names.items() if hasattr(SDPBackend, e)]
    except ImportError:
        flags = {"flash": dict(enable_flash=True, enable_mem_efficient=False, enable_math=False),
                 "efficient": dict(enable_flash=False, enable_mem_efficient=True, enable_math=False),
                 "math": dict(enable_flash=False, enable_mem_efficient=False, enable_math=True)}
        return [(n, lambda f=f: torch.backends.cuda.sdp_kernel(**f)) for n, f in flags.items()]


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

q, k, v, _ = tensors(4096, torch.bfloat16, heads=16, d=128)
for backend, pinned in backends():
    try:
        with pinned():
            seconds, samples = timed(lambda: F.scaled_dot_product_attention(q, k, v))
    except RuntimeError as e:  # this backend does not take the shape here
        results.append({"op": "attention.fwd", "backend": backend, "error": str(e).splitlines()[0]})
        continue
    results.append({"op": "attention.fwd", "backend": backend,
                    "shape": "B=2,H=16,Hkv=16,N=4096,M=4096,D=128", "dtype": "bf16",
                    "seconds": seconds, "samples": samples})
del q, k, v

meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "timed": "CUDA events around the calls, inputs resident", "results": results}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
print(json.dumps(meta))
