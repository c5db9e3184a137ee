"""PyTorch as its users call it, written as moacert kernels: attention the
way Debian's PyTorch 1.13 (no scaled_dot_product_attention) composes it,
its autograd as attention.bwd, rmsnorm and the SwiGLU MLP, a decode over a
KV cache, and one planted bug (the causal mask off by one)."""

import math

import torch


def _repeat_kv(x, heads):
    """(B, Hkv, M, D) -> (B, H, M, D): each key/value head serves H/Hkv queries."""
    return x.repeat_interleave(heads // x.shape[1], dim=1)


def _scores(q, k, scale, causal, shift=0):
    s = torch.matmul(q, _repeat_kv(k, q.shape[1]).transpose(-1, -2)) * scale  # (B, H, N, M)
    if causal:
        n, m = s.shape[-2], s.shape[-1]
        # bottom-right aligned: query i sees keys j <= i + (M - N)
        i = torch.arange(n).unsqueeze(1)
        j = torch.arange(m).unsqueeze(0)
        s = s.masked_fill(j > i + (m - n) + shift, -math.inf)
    return s


def _attention(q, k, v, scale, causal, shift=0):
    s = _scores(q, k, scale, causal, shift)
    lse = torch.logsumexp(s, dim=-1)  # (B, H, N); -inf on a row that sees no key
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a row with no key: o = 0
    o = torch.matmul(p, _repeat_kv(v, q.shape[1]))
    return o, lse


def attention(q, k, v, scale, causal):
    """softmax(q kᵀ scale) v, lse = logsumexp of the scores (attention.fwd)."""
    o, lse = _attention(q, k, v, scale, causal)
    return {"o": o, "lse": lse}


def attention_mask_off_by_one(q, k, v, scale, causal):
    """The planted bug: each query also sees the key just past its diagonal."""
    o, lse = _attention(q, k, v, scale, causal, shift=1)
    return {"o": o, "lse": lse}


def attention_backward(q, k, v, o, lse, do, scale, causal):
    """attention.bwd by PyTorch's autograd of the forward above."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out, _ = _attention(q, k, v, scale, causal)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
    return {"dq": dq, "dk": dk, "dv": dv}


def decode(q, k, v, lens, scale):
    """One query per sequence over its KV cache's first lens[b] positions."""
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=q.dtype)
    for b in range(q.shape[0]):
        n = int(lens[b])
        ob, lb = _attention(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], scale, False)
        o[b:b + 1] = ob
        lse[b:b + 1] = lb
    return {"o": o, "lse": lse}


def rmsnorm(x, w, eps):
    """x / sqrt(mean(x²) + eps) · w, as LLaMA's RMSNorm module writes it."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def swiglu(x, w1, w3, w2):
    """(silu(x w1) ⊙ (x w3)) w2."""
    return torch.matmul(torch.nn.functional.silu(x @ w1) * (x @ w3), w2)


def attention_f32_accumulate(q, k, v, scale, causal):
    """attention.fwd in a low-precision format as flash kernels compute it:
    in f32, rounded once to the format at the end."""
    o, lse = _attention(q.float(), k.float(), v.float(), scale, causal)
    return {"o": o.to(q.dtype), "lse": lse.to(q.dtype)}


def _tf32(x):
    """x (f32) rounded to TF32, 11 significant bits, to nearest even: what
    tensor cores read under torch.backends.cuda.matmul.allow_tf32."""
    bits = x.contiguous().view(torch.int32)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(x), rounded.view(torch.float32), x)


def attention_tf32(q, k, v, scale, causal):
    """attention.fwd with TF32 products, as PyTorch's CUDA matmuls give it
    with allow_tf32 (emulated on the CPU: each matmul's operands rounded to
    TF32, accumulated in f32)."""
    s = torch.matmul(_tf32(q), _tf32(_repeat_kv(k, q.shape[1])).transpose(-1, -2)) * scale
    if causal:
        n, m = s.shape[-2], s.shape[-1]
        i = torch.arange(n).unsqueeze(1)
        j = torch.arange(m).unsqueeze(0)
        s = s.masked_fill(j > i + (m - n), -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    o = torch.matmul(_tf32(p), _tf32(_repeat_kv(v, q.shape[1])))
    return {"o": o, "lse": lse}
