"""The worker side of moacert-worker/1 (docs/worker-protocol.md).

One SOCK_SEQPACKET record per JSON message; the tensors of a call lie in
one shared-memory segment (a memfd that arrives with the first call that
uses it), viewed here in place: no element is copied to cross.
"""

import json
import mmap
import os
import socket

PROTOCOL = "moacert-worker/1"
MAX_RECORD = 1 << 16

# numpy's dtype of each protocol dtype; bf16 has none (torch only).
NUMPY_DTYPES = {"f64": "<f8", "f32": "<f4", "f16": "<f2", "i64": "<i8"}


class Channel:
    """The protocol socket moacert handed this process ($MOACERT_WORKER_FD)."""

    def __init__(self, fd=None):
        if fd is None:
            if "MOACERT_WORKER_FD" not in os.environ:
                raise RuntimeError(
                    "not started by moacert: $MOACERT_WORKER_FD is not set "
                    "(run `moacert certify OP --worker \"CMD\"`)")
            fd = int(os.environ["MOACERT_WORKER_FD"])
        self.sock = socket.socket(fileno=fd)
        self.segment_id = None
        self.segment = None

    def send(self, message):
        record = json.dumps(message).encode()
        if len(record) > MAX_RECORD:
            raise ValueError("a record over 64 KiB")
        self.sock.send(record)

    def receive(self):
        """The next call, or None at the end (moacert closed the socket)."""
        data, fds, _, _ = socket.recv_fds(self.sock, MAX_RECORD, 1)
        if not data:
            for fd in fds:
                os.close(fd)
            return None
        call = json.loads(data)
        segment = call["segment"]
        if segment["id"] != self.segment_id:
            if not fds:
                raise RuntimeError("a new segment arrived without its descriptor")
            if self.segment is not None:
                self.segment.close()
            self.segment = mmap.mmap(fds[0], segment["bytes"])
            os.close(fds[0])
            self.segment_id = segment["id"]
        else:
            for fd in fds:
                os.close(fd)
        return call

    def numpy_view(self, tensor):
        """A numpy array on the segment where moacert put `tensor`."""
        import numpy as np

        dtype = np.dtype(NUMPY_DTYPES[tensor["dtype"]])
        return np.ndarray(tuple(tensor["shape"]), dtype=dtype, buffer=self.segment,
                          offset=tensor["offset"],
                          strides=tuple(s * dtype.itemsize for s in tensor["strides"]))

    def torch_view(self, tensor):
        """A CPU torch tensor on the segment (bf16 too), without a copy."""
        import torch

        dtypes = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
                  "bf16": torch.bfloat16, "i64": torch.int64}
        dtype = dtypes[tensor["dtype"]]
        itemsize = torch.empty((), dtype=dtype).element_size()
        storage = 1 + sum((n - 1) * s for n, s in zip(tensor["shape"], tensor["strides"]))
        flat = torch.frombuffer(self.segment, dtype=dtype, count=storage,
                                offset=tensor["offset"])
        return flat.as_strided(tuple(tensor["shape"]), tuple(tensor["strides"]))
