"""moacert for Python: certify PyTorch and numpy kernels against moacert's
high-precision oracle, through the worker protocol (docs/worker-protocol.md).

    import moacert
    certificate = moacert.certify("attention.fwd", my_attention, dtype="f32")

`moacert.serve(moacert.Kernel(...))` makes a process a worker by hand;
`moacert.certify` starts one for a module-level function; the pytest plugin
(`-p moacert.pytest_plugin`) adds --moacert-cases, --moacert-seed,
--moacert-rule and the `moacert_certify` fixture.
"""

from .certify import CertificationFailed, certify, find_moacert, worker_command
from .serve import DeviceUnavailable, Kernel, Unsupported, serve

__all__ = ["CertificationFailed", "DeviceUnavailable", "Kernel", "Unsupported", "certify",
           "find_moacert", "serve", "worker_command"]
__version__ = "0.1.0"
