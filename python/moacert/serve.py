"""moacert.serve: Python functions as a moacert worker (docs/worker-protocol.md).

A kernel function receives the op's inputs by name as keyword arguments
(``q``, ``k``, ``v``; attention.bwd's ``do``) and the op's parameters (``scale``, ``causal``,
``eps``, ...) the same way, and returns the outputs: a dict by name, a tuple
in the op's order, or the one tensor of a one-output op. It raises
``moacert.Unsupported`` for a problem it does not run.
"""

import sys
import traceback


class Unsupported(Exception):
    """Raised by a kernel for a problem it does not run: answered "unsupported"."""


class DeviceUnavailable(ValueError):
    """A kernel's device cannot run here (device="cuda" where torch.cuda is
    not available): refused before any case, in one line."""


def require_device(name, device):
    """Raises DeviceUnavailable, naming the kernel and why, unless `device`
    ("cpu", "cuda" or "cuda:N") can run here."""
    if device == "cpu":
        return
    if device != "cuda" and not device.startswith("cuda:"):
        raise DeviceUnavailable(f"{name}: device {device!r}: a worker's kernel runs on cpu or cuda")
    try:
        import torch
    except ImportError:
        raise DeviceUnavailable(f"{name}: device {device} needs PyTorch, which is not installed")
    if not torch.cuda.is_available():
        why = (f"PyTorch {torch.__version__} is built without CUDA" if torch.version.cuda is None
               else f"no CUDA device is visible to PyTorch {torch.__version__} (CUDA "
                    f"{torch.version.cuda})")
        raise DeviceUnavailable(f"{name}: device {device}: torch.cuda is not available: {why}")


class Kernel:
    """One kernel a worker declares in its handshake."""

    def __init__(self, op, fn, name=None, formats=("f32",), envelope=None, device="cpu",
                 accepts_strided=True, tensors=None, arithmetic=None, outputs=None,
                 causal_alignment=None, params=None, tensor_formats=None, deterministic=False):
        self.op = op
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "kernel")
        self.formats = list(formats)
        self.envelope = envelope
        self.device = device
        self.accepts_strided = accepts_strided
        # How it computes where it departs from the standard model, in the
        # text of docs/design.md#arithmetic ("sum.QK=tf32, sum.PV=tf32");
        # None: the standard model. moacert reads it against the op.
        if arithmetic is not None and not isinstance(arithmetic, str):
            raise ValueError(f"{self.name}: arithmetic is a string such as "
                             f"'round.P=storage' (docs/design.md#arithmetic), not "
                             f"{type(arithmetic).__name__}")
        self.arithmetic = arithmetic
        # How it takes its problem where libraries differ from moacert's
        # convention (docs/design.md#conventions): the outputs it returns
        # (("o",): attention without lse; None: every output), its causal
        # mask's alignment ("bottom_right", "top_left") and the format it
        # reads scale and eps in ("f64", "f32"). moacert reads them against
        # the op and refuses a wrong one before any case.
        if isinstance(outputs, str):
            outputs = [outputs]
        self.outputs = None if outputs is None else list(outputs)
        self.causal_alignment = causal_alignment
        self.params = params
        # Each tensor's format ({"q": "f32", "k": "f16"}); a tensor not named
        # is in the call's format. moacert drops a uniform one and judges a
        # mixed one tensor by tensor (docs/design.md#per-tensor-formats).
        self.tensor_formats = tensor_formats
        # True: bitwise the same outputs on every run and thread count,
        # which moacert checks (at 1 and 2 threads: torch.set_num_threads).
        self.deterministic = deterministic
        # "torch" or "numpy": what the function receives; torch where installed.
        self.tensors = tensors or _default_tensors()
        if self.tensors == "numpy" and "bf16" in self.formats:
            raise ValueError(f"{self.name}: bf16 needs torch tensors (numpy has no bfloat16)")
        if device != "cpu" and self.tensors != "torch":
            raise ValueError(f"{self.name}: device {device} needs torch tensors")
        require_device(self.name, device)

    def declaration(self):
        d = {"op": self.op, "name": self.name, "formats": self.formats, "device": self.device,
             "accepts_strided": self.accepts_strided}
        if self.envelope is not None:
            d["envelope"] = self.envelope
        if self.arithmetic is not None:
            d["arithmetic"] = self.arithmetic
        if self.outputs is not None:
            d["outputs"] = self.outputs
        if self.causal_alignment is not None:
            d["causal_alignment"] = self.causal_alignment
        if self.params is not None:
            d["params"] = self.params
        if self.tensor_formats is not None:
            d["tensor_formats"] = self.tensor_formats
        if self.deterministic:
            d["deterministic"] = True
        return d


def _default_tensors():
    try:
        import torch  # noqa: F401
        return "torch"
    except ImportError:
        return "numpy"


def _shape_of(x):
    return tuple(int(n) for n in x.shape)


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "")


def _write_output(view, result, name, device):
    """Copies a returned output into moacert's output tensor, after checking
    that it is one: the shape and dtype moacert asked for."""
    if not hasattr(result, "shape") or not hasattr(result, "dtype"):
        raise TypeError(f"returned {type(result).__name__} for {name}, not a tensor")
    if _shape_of(result) != _shape_of(view):
        raise ValueError(f"returned {name} of shape {_shape_of(result)}, "
                         f"expected {_shape_of(view)}")
    if _dtype_name(result) != _dtype_name(view):
        raise ValueError(f"returned {name} as {_dtype_name(result)}, "
                         f"expected {_dtype_name(view)}")
    if hasattr(view, "copy_"):  # torch: from the device when there
        if result.data_ptr() != view.data_ptr():
            view.copy_(result.detach())
    else:
        import numpy as np
        if not np.shares_memory(view, result) or view.ctypes.data != result.ctypes.data:
            view[...] = result


def _outputs_by_name(result, names):
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        extra = [n for n in result if n not in names]
        if missing or extra:
            raise ValueError(f"returned outputs {sorted(result)}, expected {names}")
        return result
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise ValueError(f"returned {len(result)} outputs, expected {len(names)} ({names})")
        return dict(zip(names, result))
    if len(names) != 1:
        raise ValueError(f"returned one output, expected {len(names)} ({names})")
    return {names[0]: result}


def _run(channel, kernel, call):
    views = {}
    for t in call["tensors"]:
        views[t["name"]] = (channel.torch_view(t) if kernel.tensors == "torch"
                            else channel.numpy_view(t))
    inputs = [t["name"] for t in call["tensors"] if not t["output"]]
    # The outputs the kernel returns: those it declares (the others, which
    # moacert does not judge, stay as moacert filled them).
    outputs = [t["name"] for t in call["tensors"]
               if t["output"] and (kernel.outputs is None or t["name"] in kernel.outputs)]
    # On a GPU: each input copied to the device (the shared memory is the
    # host's), each output copied back into its view by _write_output, and
    # the device synchronized before the answer, so that "done" means
    # written.
    arguments = {}
    for n in inputs:
        x = views[n]
        if kernel.device != "cpu":
            x = x.to(kernel.device)
        arguments[n] = x
    arguments.update(call["params"])
    # The threads moacert asks for (--threads; 1 and 2 in the determinism
    # check): PyTorch's intra-op threads. A numpy kernel has no such knob.
    if call.get("threads") and kernel.tensors == "torch":
        import torch
        torch.set_num_threads(int(call["threads"]))
    result = kernel.fn(**arguments)
    for name, value in _outputs_by_name(result, outputs).items():
        _write_output(views[name], value, name, kernel.device)
    if kernel.device != "cpu":
        import torch
        torch.cuda.synchronize()


def serve(*kernels):
    """Serves `kernels` (Kernel objects) to the moacert that started this
    process, until it closes the socket. Each call's answer: done, unsupported
    (the kernel raised Unsupported), or error (any other exception, its type
    and message)."""
    from .protocol import PROTOCOL, Channel

    by_name = {}
    for k in kernels:
        if k.name in by_name:
            raise ValueError(f"kernel name {k.name} is served twice")
        by_name[k.name] = k
    channel = Channel()
    channel.send({"protocol": PROTOCOL, "kernels": [k.declaration() for k in kernels]})
    while True:
        call = channel.receive()
        if call is None:
            return
        answer = {"call": call["call"], "status": "done"}
        try:
            _run(channel, by_name[call["kernel"]], call)
        except Unsupported as e:
            answer = {"call": call["call"], "status": "unsupported", "message": str(e)}
        except Exception as e:  # the kernel's failure is the answer, not the worker's
            last = traceback.extract_tb(e.__traceback__)[-1]
            answer = {"call": call["call"], "status": "error",
                      "message": f"{type(e).__name__}: {e} ({last.filename}:{last.lineno})"}
        # A print of the kernel reaches moacert's watch before the answer does.
        sys.stdout.flush()
        channel.send(answer)
