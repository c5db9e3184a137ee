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


def _decode(q, k, v, lens, scale, attend):
    """One query per sequence over its KV cache's first lens[b] positions,
    each sequence's attention by attend(q, k, v, scale, causal)."""
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=q.dtype)
    for b in range(q.shape[0]):
        n = int(lens[b])
        o[b:b + 1], lse[b:b + 1] = attend(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n],
                                          scale, False)
    return {"o": o, "lse": lse}


def decode(q, k, v, lens, scale):
    """One query per sequence over its KV cache's first lens[b] positions."""
    return _decode(q, k, v, lens, scale, _attention)


def decode_f16_cache(q, k, v, lens, scale):
    """llama.cpp's decode: an f32 query against an f16 KV cache, computed in
    f32, o written in f32 and lse in the cache's f16 (declared
    tensor_formats, docs/design.md#per-tensor-formats)."""
    r = _decode(q, k.float(), v.float(), lens, scale, _attention)
    return {"o": r["o"], "lse": r["lse"].to(torch.float16)}


def decode_f16_cache_q_f16(q, k, v, lens, scale):
    """The same with q rounded to f16 before its dot products (what ggml
    does against an f16 K): past the bound."""
    return decode_f16_cache(q.half().float(), k, v, lens, scale)


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


# Kernels that take a freedom of docs/design.md#arithmetic, each certified
# declared (it holds) and undeclared (it fails) in test_pytorch.py.

def _bf16(x):
    """x rounded to bf16 (to nearest even) and back to its own format."""
    return x.to(torch.bfloat16).to(x.dtype)


def _coarse_exp(x):
    """An exp of relative error 2^-12, as a short polynomial gives it; exact
    at 0 (each row's maximum), so that the weights' ratios change."""
    return torch.where(x == 0, torch.ones_like(x), torch.exp(x) * (1 + 2.0**-12))


def _coarse_log(x):
    """A log of relative error 2^-12."""
    return torch.log(x) * (1 + 2.0**-12)


def _softmax(s, exp=torch.exp, log=torch.log):
    """P and lse of the scores s as a kernel computes them, shifted by each
    row's maximum; a row that sees no key gives P = 0 and lse = -inf."""
    m = s.amax(-1, keepdim=True)
    m = torch.where(m == -math.inf, torch.zeros_like(m), m)
    e = exp(s - m)
    l = e.sum(-1, keepdim=True)
    p = torch.where(l > 0, e / l, torch.zeros_like(e))
    return p, (m + log(l)).squeeze(-1)


def _forward(q, k, v, scale, causal, exp=torch.exp, log=torch.log, round_p=None):
    """attention.fwd with the freedoms given: the functions, P's rounding."""
    p, lse = _softmax(_scores(q, k, scale, causal), exp, log)
    if round_p is not None:
        p = round_p(p)
    return torch.matmul(p, _repeat_kv(v, q.shape[1])), lse


def _sum_groups(x, kv_heads):
    """(B, H, M, D) -> (B, Hkv, M, D): each key/value head's gradient is the
    sum over the query heads it serves."""
    b, h, m, d = x.shape
    return x.reshape(b, kv_heads, h // kv_heads, m, d).sum(2)


def _kept(x, rounding):
    """x as a kernel keeps it: rounded where the freedom is taken."""
    return x if rounding is None else rounding(x)


def _backward(q, k, v, o, lse, do, scale, causal, exp=torch.exp, round_p=None, round_ds=None,
              round_dp=None, round_d=None):
    """attention.bwd as FlashAttention's backward computes it: P recomputed
    from lse, dV = Pᵀ dO, dS = P (dP - D) with dP = dO Vᵀ and D = rowsum(dO o),
    dQ = dS K scale, dK = dSᵀ Q scale; with the freedoms given."""
    s = _scores(q, k, scale, causal)
    p = torch.where(s == -math.inf, torch.zeros_like(s), exp(s - lse.unsqueeze(-1)))
    p = _kept(p, round_p)
    heads, kv_heads = q.shape[1], k.shape[1]
    dv = torch.matmul(p.transpose(-1, -2), do)
    dp = _kept(torch.matmul(do, _repeat_kv(v, heads).transpose(-1, -2)), round_dp)
    ds = _kept(p * (dp - _kept((do * o).sum(-1, keepdim=True), round_d)), round_ds)
    dq = torch.matmul(ds, _repeat_kv(k, heads)) * scale
    dk = torch.matmul(ds.transpose(-1, -2), q) * scale
    return {"dq": dq, "dk": _sum_groups(dk, kv_heads), "dv": _sum_groups(dv, kv_heads)}


def backward_p_bf16(q, k, v, o, lse, do, scale, causal):
    """attention.bwd in f32 with P rounded to bf16 before its products."""
    return _backward(q, k, v, o, lse, do, scale, causal, round_p=_bf16)


def backward_ds_bf16(q, k, v, o, lse, do, scale, causal):
    """attention.bwd in f32 with dS rounded to bf16 before its products."""
    return _backward(q, k, v, o, lse, do, scale, causal, round_ds=_bf16)


def backward_dp_bf16(q, k, v, o, lse, do, scale, causal):
    """attention.bwd in f32 with dP = dO Vᵀ rounded to bf16 before dS."""
    return _backward(q, k, v, o, lse, do, scale, causal, round_dp=_bf16)


def backward_d_bf16(q, k, v, o, lse, do, scale, causal):
    """attention.bwd in f32 with D = rowsum(dO o) kept in bf16, as a kernel
    that stores it between its passes in the storage format does."""
    return _backward(q, k, v, o, lse, do, scale, causal, round_d=_bf16)


def backward_exp_coarse(q, k, v, o, lse, do, scale, causal):
    """attention.bwd in f32 recomputing P with an exp of relative error 2^-12."""
    return _backward(q, k, v, o, lse, do, scale, causal, exp=_coarse_exp)


def _forward_backward(q, k, v, do, scale, causal, exp=torch.exp, log=torch.log, round_p=None,
                      round_ds=None, round_lse=None):
    o, lse = _forward(q, k, v, scale, causal, exp, log, round_p)
    lse = _kept(lse, round_lse)
    grads = _backward(q, k, v, o, lse, do, scale, causal, exp, round_p, round_ds)
    return {"o": o, "lse": lse, **grads}


def fused_p_bf16(q, k, v, do, scale, causal):
    """attention.fwdbwd in f32, P rounded to bf16 in both passes."""
    return _forward_backward(q, k, v, do, scale, causal, round_p=_bf16)


def fused_ds_bf16(q, k, v, do, scale, causal):
    """attention.fwdbwd in f32, dS rounded to bf16."""
    return _forward_backward(q, k, v, do, scale, causal, round_ds=_bf16)


def fused_log_coarse(q, k, v, do, scale, causal):
    """attention.fwdbwd in f32, lse from a log of relative error 2^-12."""
    return _forward_backward(q, k, v, do, scale, causal, log=_coarse_log)


def fused_lse_bf16(q, k, v, do, scale, causal):
    """attention.fwdbwd in f32, lse rounded to bf16 where it is kept, and
    the backward recomputing P from that lse."""
    return _forward_backward(q, k, v, do, scale, causal, round_lse=_bf16)


def decode_p_bf16(q, k, v, lens, scale):
    """attention.decode in f32 with P rounded to bf16 before P·V."""
    return _decode(q, k, v, lens, scale,
                   lambda *args: _forward(*args, round_p=_bf16))


def _block(x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2, heads, kv_heads, eps,
           exp=torch.exp, round_p=None):
    """The block (pre-norm, causal attention, SwiGLU MLP, no RoPE) in f32,
    its attention with the freedoms given."""
    b, n, dm = x.shape
    d = wq.shape[1] // heads

    def split_heads(z, count):  # (B, N, count·D) -> (B, count, N, D)
        return z.reshape(b, n, count, d).transpose(1, 2)

    xn = rmsnorm(x, attn_norm, eps)
    o, _ = _forward(split_heads(xn @ wq, heads), split_heads(xn @ wk, kv_heads),
                    split_heads(xn @ wv, kv_heads), 1 / math.sqrt(d), True, exp=exp,
                    round_p=round_p)
    h = x + o.transpose(1, 2).reshape(b, n, heads * d) @ wo
    return h + swiglu(rmsnorm(h, mlp_norm, eps), w1, w3, w2)


def block_exp_coarse(x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2, heads, kv_heads, eps):
    """The block in f32, its softmax with an exp of relative error 2^-12."""
    return _block(x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2, heads, kv_heads, eps,
                  exp=_coarse_exp)


def block_p_bf16(x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2, heads, kv_heads, eps):
    """The block in f32, its attention's P rounded to bf16 before P·V (a
    freedom of its attention part, which the block declares as its own)."""
    return _block(x, attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2, heads, kv_heads, eps,
                  round_p=_bf16)
