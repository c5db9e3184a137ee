"""moacert.serve's GPU path, as far as a machine without CUDA can check it:
device="cuda" is refused in one line where torch.cuda is not available
(moacert.certify before moacert starts; `python3 -m moacert` with exit 2),
and the path itself (inputs copied to the device, the kernel run there,
outputs copied back into moacert's shared memory, the device synchronized
before the answer) run with torch's device copies stood in for."""

import importlib
import os
import subprocess
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import moacert  # noqa: E402
served = importlib.import_module("moacert.serve")  # the module (moacert.serve is the function)

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@no_cuda
def test_certify_refuses_cuda_in_one_line_before_moacert_runs():
    with pytest.raises(moacert.DeviceUnavailable) as refused:
        moacert.certify("rmsnorm", rmsnorm, device="cuda", moacert="/nonexistent/moacert")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("rmsnorm: device cuda: torch.cuda is not available: ")


@no_cuda
def test_the_worker_refuses_cuda_with_exit_2_and_one_line():
    run = subprocess.run(
        [sys.executable, "-m", "moacert", f"{os.path.abspath(__file__)}:rmsnorm", "--op",
         "rmsnorm", "--device", "cuda"],
        capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "python")))
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("python3 -m moacert: rmsnorm: device cuda: torch.cuda is not "
                               "available: ")


def test_an_unknown_device_is_refused():
    with pytest.raises(moacert.DeviceUnavailable, match="runs on cpu or cuda"):
        moacert.Kernel("rmsnorm", rmsnorm, device="tpu")


class Channel:
    """The shared memory of one call, as Channel.torch_view hands it out."""

    def __init__(self, tensors):
        self.tensors = tensors

    def torch_view(self, t):
        return self.tensors[t["name"]]


def test_the_device_path_copies_in_runs_there_and_copies_back(monkeypatch):
    # A "device" whose copies are real copies: what the kernel receives is
    # not moacert's memory, and its outputs must come back into it.
    moved, synchronized, seen = [], [], {}
    real_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        if args and args[0] == "cuda":
            moved.append(args[0])
            return self.clone()
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", to)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: synchronized.append(True))
    monkeypatch.setattr(served, "require_device", lambda name, device: None)

    def kernel(x, w, eps):
        seen["x"] = x
        return rmsnorm(x, w, eps)

    x, w = torch.randn(3, 8), torch.randn(8)
    y = torch.full((3, 8), float("nan"))
    channel = Channel({"x": x, "w": w, "y": y})
    call = {"params": {"eps": 1e-6},
            "tensors": [{"name": "x", "output": False}, {"name": "w", "output": False},
                        {"name": "y", "output": True}]}
    k = served.Kernel("rmsnorm", kernel, device="cuda", tensors="torch")
    served._run(channel, k, call)
    assert moved == ["cuda", "cuda"]
    assert seen["x"].data_ptr() != x.data_ptr()  # the kernel ran on the copy
    assert synchronized == [True]  # before the answer
    assert torch.equal(y, rmsnorm(x, w, 1e-6))  # written back where moacert reads
