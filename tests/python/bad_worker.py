"""Workers that break the protocol or their kernel's contract, one per
mode, each a CTest (tests/python/CMakeLists.txt) with the verdict moacert
must reach: a fault of the kernel is its counterexample (exit 1), a
handshake moacert cannot use is refused (exit 2, one line).

    python3 bad_worker.py MODE
"""

import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import moacert  # noqa: E402
from moacert.protocol import PROTOCOL, Channel  # noqa: E402


def rmsnorm(x, w, eps):
    """A correct rmsnorm in numpy, which the modes below then break."""
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + eps) * w
    return y.astype(x.dtype)


def crashes(x, w, eps):
    os.kill(os.getpid(), signal.SIGSEGV)


def hangs(x, w, eps):
    time.sleep(3600)


def exits(x, w, eps):
    os._exit(3)


def wrong_shape(x, w, eps):
    return rmsnorm(x, w, eps)[:, :-1] if x.shape[1] > 1 else np.zeros((x.shape[0], 2), x.dtype)


def wrong_dtype(x, w, eps):
    return rmsnorm(x, w, eps).astype(np.float64)


def wrong_count(x, w, eps):
    y = rmsnorm(x, w, eps)
    return (y, y)


def writes_nan(x, w, eps):
    y = rmsnorm(x, w, eps)
    y[...] = np.nan
    return y


def prints(x, w, eps):
    print("debug: x is", x.shape)
    return rmsnorm(x, w, eps)


def changes_its_input(x, w, eps):
    y = rmsnorm(x, w, eps)
    x[...] = 0
    return y


def unsupported(x, w, eps):
    raise moacert.Unsupported(f"T = {x.shape[0]} is not a multiple of 128")


def raises(x, w, eps):
    raise RuntimeError("CUDA error: out of memory")


KERNELS = {f.__name__: f for f in (rmsnorm, crashes, hangs, exits, wrong_shape, wrong_dtype,
                                    wrong_count, writes_nan, prints, changes_its_input, unsupported, raises)}


def handshake_only(kernels, protocol=PROTOCOL):
    """Sends a handshake by hand, then serves nothing."""
    Channel().send({"protocol": protocol, "kernels": kernels})
    time.sleep(30)


def main(mode):
    if mode in KERNELS:
        moacert.serve(moacert.Kernel("rmsnorm", KERNELS[mode], tensors="numpy"))
    elif mode == "unknown_op":
        handshake_only([{"op": "rmsnorm.fast", "name": "k", "formats": ["f32"]}])
    elif mode == "malformed_envelope":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"],
                         "envelope": {"axes": {"D": {"min": 9, "max": 8}}}}])
    elif mode == "unknown_axis":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"],
                         "envelope": {"axes": {"N": {"max": 8}}}}])
    elif mode == "unknown_output":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"], "outputs": ["z"]}])
    elif mode == "causal_alignment_without_causal":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"],
                         "causal_alignment": "top_left"}])
    elif mode == "unknown_format":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"],
                         "tensor_formats": {"x": "f32", "w": "f8"}}])
    elif mode == "mixed_formats":
        # f16 weights beside f32 activations (docs/design.md#per-tensor-formats):
        # w handed over in f16, x and y in f32; y computed in f64, then f32.
        moacert.serve(moacert.Kernel("rmsnorm", rmsnorm, name="k", tensors="numpy",
                                     tensor_formats={"w": "f16"}))
    elif mode == "mixed_formats_y_f16":
        # The same, y rounded to f16 while declared f32: fails.
        moacert.serve(moacert.Kernel(
            "rmsnorm", lambda x, w, eps: rmsnorm(x, w, eps).astype(np.float16).astype(np.float32),
            name="k", tensors="numpy", tensor_formats={"w": "f16"}))
    elif mode == "other_protocol":
        handshake_only([{"op": "rmsnorm", "name": "k", "formats": ["f32"]}], "moacert-worker/0")
    elif mode == "prints_before_handshake":
        print("loading...", flush=True)
        moacert.serve(moacert.Kernel("rmsnorm", rmsnorm, tensors="numpy"))
    elif mode == "writes_past_its_output":
        # What a kernel with an off-by-one store does: one element past y.
        channel = Channel()
        channel.send({"protocol": PROTOCOL,
                      "kernels": [{"op": "rmsnorm", "name": "k", "formats": ["f32"]}]})
        while True:
            call = channel.receive()
            if call is None:
                return
            t = {d["name"]: d for d in call["tensors"]}
            v = {n: channel.numpy_view(d) for n, d in t.items()}
            v["y"][...] = rmsnorm(v["x"], v["w"], call["params"]["eps"])
            end = t["y"]["offset"] + v["y"].nbytes
            channel.segment[end:end + 4] = b"\0\0\0\0"
            channel.send({"call": call["call"], "status": "done"})
    elif mode == "garbage_answer":
        channel = Channel()
        channel.send({"protocol": PROTOCOL,
                      "kernels": [{"op": "rmsnorm", "name": "k", "formats": ["f32"]}]})
        channel.receive()
        channel.sock.send(b"done")
        time.sleep(30)
    else:
        sys.exit(f"bad_worker.py: unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1])
