#!/usr/bin/env python3
"""The oracle's reference problem in mpmath, for docs/performance.md.

attention.fwd, B=1, H=1, N=M=128, D=64, non-causal, inputs uniform in
[-1, 1) rounded to f32, scale 1/sqrt(64): S = scale Q K^T, P = softmax(S)
(max-shifted), O = P V, LSE = m + log(l). Evaluated at 53 bits, the
precision of the oracle's first pass, either with mpmath's point numbers
(mp.mpf; what a naive high-precision reference does) or with its interval
numbers (mp.iv; rigorous like the oracle's first pass). Prints the
seconds (wall and process CPU) taken by the evaluation alone.

    python3 bench/oracle_mpmath.py [--interval] [--prec 53] [--n 128] [--d 64]
                                   [--case CASE.json]

--case also writes the same inputs as a case file (docs/case-files.md),
so that `moacert oracle attention.fwd --input CASE.json` answers the same
problem (docs/performance-history.md#oracle).
"""
import argparse
import json
import random
import struct
import time

import mpmath


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", action="store_true", help="mpmath.iv instead of mpmath.mp")
    ap.add_argument("--prec", type=int, default=53)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--case", help="also write the inputs as a case file")
    args = ap.parse_args()
    ctx = mpmath.iv if args.interval else mpmath.mp
    ctx.prec = args.prec
    n = m = args.n
    d = args.d
    rng = random.Random(2026)
    q = [[f32(rng.uniform(-1, 1)) for _ in range(d)] for _ in range(n)]
    k = [[f32(rng.uniform(-1, 1)) for _ in range(d)] for _ in range(m)]
    v = [[f32(rng.uniform(-1, 1)) for _ in range(d)] for _ in range(m)]
    if args.case:
        def tensor(rows):
            return {"shape": [1, 1, len(rows), d], "data": [x.hex() for row in rows for x in row]}
        case = {"op": "attention.fwd", "dtype": "f32", "params": {"causal": False},
                "tensors": {"q": tensor(q), "k": tensor(k), "v": tensor(v)}}
        with open(args.case, "w") as f:
            json.dump(case, f)

    start, cpu_start = time.perf_counter(), time.process_time()
    Q = [[ctx.mpf(x) for x in row] for row in q]
    K = [[ctx.mpf(x) for x in row] for row in k]
    V = [[ctx.mpf(x) for x in row] for row in v]
    scale = ctx.mpf(1.0 / d ** 0.5)
    o, lse = [], []
    for i in range(n):
        s = [scale * ctx.fsum(Q[i][t] * K[j][t] for t in range(d)) for j in range(m)]
        if args.interval:
            shift = ctx.mpf(max(float(x.a) for x in s))  # a point: softmax is shift-invariant
        else:
            shift = max(s)
        e = [ctx.exp(x - shift) for x in s]
        l = ctx.fsum(e)
        p = [x / l for x in e]
        o.append([ctx.fsum(p[j] * V[j][t] for j in range(m)) for t in range(d)])
        lse.append(shift + ctx.log(l))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    kind = "mpmath.iv" if args.interval else "mpmath.mp"
    print(f"{kind} prec={args.prec} N=M={n} D={d}: {seconds:.3f} s wall, {cpu:.3f} s cpu")


if __name__ == "__main__":
    main()
