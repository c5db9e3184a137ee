"""moacert.certify: run `moacert certify OP --worker ...` on one Python
function and return its certificate, or fail with the counterexample."""

import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .serve import require_device


class CertificationFailed(AssertionError):
    """The kernel failed certification: the message carries the
    counterexample and ends with the `reproduce:` command. `reproduce` is
    that command as moacert printed it; `command`, the same one as a shell
    here runs it (the moacert that certified named by its path where
    `moacert` on PATH is another one, or none)."""

    def __init__(self, message, certificate, reproduce, command=None):
        super().__init__(message)
        self.certificate = certificate
        self.reproduce = reproduce
        self.command = command or reproduce


def runnable_here(reproduce, moacert):
    """`reproduce` ("moacert reproduce TOKEN --worker ...") with its first
    word the moacert that certified, unless `moacert` on PATH is that one."""
    program, _, rest = reproduce.partition(" ")
    if not reproduce or program != "moacert":
        return reproduce
    on_path = shutil.which("moacert")
    if on_path and os.path.realpath(on_path) == os.path.realpath(moacert):
        return reproduce
    return shlex.join([os.path.abspath(moacert)]) + " " + rest


def find_moacert():
    """The moacert command: $MOACERT, else `moacert` on PATH, else the
    build tree's (build/cli/moacert beside python/)."""
    if os.environ.get("MOACERT"):
        return os.environ["MOACERT"]
    on_path = shutil.which("moacert")
    if on_path:
        return on_path
    built = Path(__file__).resolve().parents[2] / "build" / "cli" / "moacert"
    if built.exists():
        return str(built)
    raise FileNotFoundError("cannot find moacert: set $MOACERT, put it on PATH, or build it "
                            "(build/cli/moacert)")


def worker_command(op, fn, name=None, formats=("f32",), envelope=None, device="cpu",
                   tensors=None, contiguous=False, arithmetic=None, outputs=None,
                   causal_alignment=None, params=None, tensor_formats=None, deterministic=False):
    """The shell command that serves `fn` (a module-level function) as a
    worker: what --worker and the reproduce line carry."""
    qualname = fn.__qualname__
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise ValueError(f"{qualname}: moacert.certify serves module-level functions "
                         "(its worker imports the function's file)")
    source = os.path.abspath(inspect.getfile(fn))
    package_parent = str(Path(__file__).resolve().parents[1])
    words = ["env", f"PYTHONPATH={package_parent}", sys.executable, "-m", "moacert",
             f"{source}:{qualname}", "--op", op, "--name", name or fn.__name__,
             "--formats", ",".join(formats), "--device", device]
    if envelope is not None:
        words += ["--envelope", json.dumps(envelope)]
    if tensors:
        words += ["--tensors", tensors]
    if contiguous:
        words.append("--contiguous")
    if arithmetic is not None:
        words += ["--arithmetic", arithmetic]
    if outputs is not None:
        words += ["--outputs", ",".join([outputs] if isinstance(outputs, str) else outputs)]
    if causal_alignment is not None:
        words += ["--causal-alignment", causal_alignment]
    if params is not None:
        words += ["--params", params]
    if tensor_formats is not None:
        words += ["--tensor-formats", json.dumps(tensor_formats)]
    if deterministic:
        words.append("--deterministic")
    return shlex.join(words)


def certify(op, fn, dtype="f32", cases=None, seed=None, rule=None, shape=None, name=None,
            formats=None, envelope=None, device="cpu", timeout=None, tensors=None,
            contiguous=False, out=None, moacert=None, arithmetic=None, arithmetic_at_most=None,
            outputs=None, causal_alignment=None, params=None, tensor_formats=None,
            deterministic=False):
    """Certifies `fn` as a kernel of `op` in `dtype` and returns the
    certificate (certificate.json as a dict: verdict, worst_case, tensors
    with their statistics, regimes, ...). `arithmetic` declares how `fn`
    computes where it departs from the standard model (the text of
    docs/design.md#arithmetic, e.g. "sum.QK=tf32, sum.PV=tf32"); the
    certificate's `arithmetic_check` then says how it fares under the
    standard model and what it needs; `arithmetic_at_most` fails it past a
    limit. `outputs`, `causal_alignment` and `params` declare how `fn`
    takes its problem (docs/design.md#conventions): the outputs it returns
    (("o",): attention without lse, which is then not judged), its causal
    mask's alignment ("top_left" as ONNX's is_causal) and the format it
    reads scale and eps in ("f32"). Raises CertificationFailed (an AssertionError) when it fails,
    ValueError when moacert refuses the worker or the arguments (its one
    line)."""
    formats = list(formats or [dtype])
    require_device(name or fn.__name__, device)  # before moacert starts a worker that cannot run
    command = worker_command(op, fn, name, formats, envelope, device, tensors, contiguous,
                             arithmetic, outputs, causal_alignment, params, tensor_formats,
                             deterministic)
    with tempfile.TemporaryDirectory(prefix="moacert-") as scratch:
        folder = out or os.path.join(scratch, "certificate")
        moacert = moacert or find_moacert()
        args = [moacert, "certify", op, "--worker", command, "--dtype", dtype,
                "--out", folder]
        for option, value in (("--cases", cases), ("--seed", seed), ("--rule", rule),
                              ("--shape", shape), ("--timeout", timeout),
                              ("--arithmetic-at-most", arithmetic_at_most)):
            if value is not None:
                args += [option, str(value)]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode not in (0, 1):
            lines = (run.stderr or run.stdout).strip().splitlines()
            raise ValueError(lines[-1] if lines else f"moacert exited {run.returncode}")
        with open(os.path.join(folder, "certificate.json")) as f:
            certificate = json.load(f)
    if run.returncode == 0:
        return certificate
    lines = run.stdout.strip().splitlines()
    reproduce = next((l[len("reproduce: "):] for l in lines if l.startswith("reproduce: ")), "")
    why = [l for l in lines if not l.startswith("reproduce: ")]
    message = "\n".join(why + [f"reproduce: {reproduce}"])
    raise CertificationFailed(message, certificate, reproduce, runnable_here(reproduce, moacert))
