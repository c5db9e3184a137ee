"""A worker whose kernel computes nothing: it answers each call at once, so
that `moacert bench OP --worker "python3 bench/null_worker.py OP"` times
the protocol alone, its tensors crossing both ways (docs/performance-history.md,
"Workers"). Its outputs stay NaN: a benchmark, never a certification."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from moacert.protocol import PROTOCOL, Channel  # noqa: E402


def main(op):
    channel = Channel()
    channel.send({"protocol": PROTOCOL, "kernels": [
        {"op": op, "name": "crossing", "formats": ["f64", "f32", "bf16", "f16"],
         "accepts_strided": True}]})
    while True:
        call = channel.receive()
        if call is None:
            return
        channel.send({"call": call["call"], "status": "done"})


if __name__ == "__main__":
    main(sys.argv[1])
