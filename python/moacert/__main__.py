"""`python3 -m moacert FILE.py:FUNCTION --op OP ...`: one function as a
moacert worker, the command moacert.certify hands `moacert --worker`."""

import json
import sys

from .serve import Kernel, serve


def main(argv=None):
    """`python3 -m moacert FILE.py:FUNCTION --op OP [--name N] [--formats f32,bf16]
    [--envelope JSON] [--device cpu|cuda] [--tensors torch|numpy] [--arithmetic SPEC]
    [--outputs o,lse] [--causal-alignment top_left] [--params f32]
    [--tensor-formats JSON] [--deterministic]`: serves one
    module-level function (what moacert.certify starts)."""
    import argparse
    import importlib.util
    import os

    parser = argparse.ArgumentParser(prog="python3 -m moacert")
    parser.add_argument("function", help="FILE.py:NAME or MODULE:NAME")
    parser.add_argument("--op", required=True)
    parser.add_argument("--name")
    parser.add_argument("--formats", default="f32")
    parser.add_argument("--envelope")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tensors")
    parser.add_argument("--arithmetic",
                        help="the kernel's declared arithmetic (docs/design.md#arithmetic)")
    parser.add_argument("--outputs",
                        help="the outputs the function returns, comma-separated "
                             "(docs/design.md#conventions)")
    parser.add_argument("--causal-alignment", help="bottom_right or top_left")
    parser.add_argument("--params", help="f64 or f32: the format it reads scale and eps in")
    parser.add_argument("--tensor-formats",
                        help='each tensor\'s format, as JSON: {"q": "f32", "k": "f16"}')
    parser.add_argument("--deterministic", action="store_true",
                        help="claim bitwise the same outputs at any thread count (checked)")
    parser.add_argument("--contiguous", action="store_true",
                        help="ask moacert for row-major contiguous tensors")
    a = parser.parse_args(argv)
    where, _, qualname = a.function.rpartition(":")
    if where.endswith(".py"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(where))[0], where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = module
    for part in qualname.split("."):
        fn = getattr(fn, part)
    try:
        kernel = Kernel(a.op, fn, name=a.name or qualname, formats=a.formats.split(","),
                        envelope=json.loads(a.envelope) if a.envelope else None, device=a.device,
                        accepts_strided=not a.contiguous, tensors=a.tensors,
                        arithmetic=a.arithmetic,
                        outputs=a.outputs.split(",") if a.outputs else None,
                        causal_alignment=a.causal_alignment, params=a.params,
                        tensor_formats=json.loads(a.tensor_formats) if a.tensor_formats else None,
                        deterministic=a.deterministic)
    except ValueError as e:  # a kernel this worker cannot serve: one line, exit 2
        print(f"python3 -m moacert: {e}", file=sys.stderr)
        sys.exit(2)
    serve(kernel)


if __name__ == "__main__":
    main()
