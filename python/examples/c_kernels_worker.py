"""A C library of the plugin ABI (include/moacert/plugin.h) served as a
worker, its kernels called through ctypes on the tensors where they lie in
the shared segment: the same computation as `--plugin LIB.so`, so that the
two protocols can be timed against each other (docs/performance-history.md,
"Workers").

    moacert certify attention.fwd --worker "python3 c_kernels_worker.py LIB.so attention"

Pure Python, no numpy: nothing but the protocol and the C kernel runs.
"""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from moacert.protocol import PROTOCOL, Channel  # noqa: E402


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.POINTER(DLTensor)), ctypes.c_int,
                       ctypes.POINTER(ctypes.POINTER(DLTensor)), ctypes.c_int, ctypes.c_char_p,
                       ctypes.c_char_p, ctypes.c_size_t)


class EntryV1(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char_p), ("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("accepts_strided", ctypes.c_int), ("run", RUN)]


class EntryV2(ctypes.Structure):
    # ABI 2 adds the envelope and the device after run (this worker serves
    # CPU kernels with an unlimited envelope: the fields are not read).
    _fields_ = EntryV1._fields_ + [("envelope", ctypes.c_void_p), ("device", ctypes.c_char_p)]


class EntryV3(ctypes.Structure):
    # ABI 3 adds the declared arithmetic (docs/design.md#arithmetic), which
    # the handshake passes on.
    _fields_ = EntryV2._fields_ + [("arithmetic", ctypes.c_char_p)]


class EntryV4(ctypes.Structure):
    # ABI 4 adds how the kernel takes its problem (docs/design.md#conventions),
    # which the handshake passes on.
    _fields_ = EntryV3._fields_ + [("outputs", ctypes.c_char_p),
                                   ("causal_alignment", ctypes.c_char_p),
                                   ("params", ctypes.c_char_p),
                                   ("tensor_formats", ctypes.c_char_p),
                                   ("deterministic", ctypes.c_int)]


ENTRY = {1: EntryV1, 2: EntryV2, 3: EntryV3, 4: EntryV4}


DL_TYPES = {"f64": (2, 64), "f32": (2, 32), "f16": (2, 16), "bf16": (4, 16), "i64": (0, 64)}


def dl_tensor(base, t):
    n = len(t["shape"])
    d = DLTensor()
    d.data = base + t["offset"]
    d.device_type, d.device_id, d.ndim = 1, 0, n  # kDLCPU
    d.code, d.bits = DL_TYPES[t["dtype"]]
    d.lanes = 1
    d.shape = (ctypes.c_int64 * n)(*t["shape"])
    d.strides = (ctypes.c_int64 * n)(*t["strides"])
    d.byte_offset = 0
    return d


def main(library, name):
    lib = ctypes.CDLL(os.path.abspath(library))
    lib.moacert_plugin_kernels.restype = ctypes.c_void_p
    count, abi = ctypes.c_int(), ctypes.c_int()
    address = lib.moacert_plugin_kernels(ctypes.byref(count), ctypes.byref(abi))
    table = ctypes.cast(address, ctypes.POINTER(ENTRY[abi.value]))
    entries = [table[i] for i in range(count.value) if table[i].name.decode() == name]
    run = {e.dtype.decode(): e.run for e in entries}
    channel = Channel()
    kernel = {"op": entries[0].op.decode(), "name": name, "formats": sorted(run),
              "accepts_strided": all(e.accepts_strided for e in entries)}
    arithmetic = getattr(entries[0], "arithmetic", None)
    if arithmetic:
        kernel["arithmetic"] = arithmetic.decode()
    for field in ("causal_alignment", "params"):
        value = getattr(entries[0], field, None)
        if value:
            kernel[field] = value.decode()
    outputs = getattr(entries[0], "outputs", None)
    if outputs:
        kernel["outputs"] = outputs.decode().split(",")
    formats = getattr(entries[0], "tensor_formats", None)
    if formats:
        kernel["tensor_formats"] = dict(item.split("=") for item in formats.decode().split(","))
    if getattr(entries[0], "deterministic", 0):
        kernel["deterministic"] = True
    channel.send({"protocol": PROTOCOL, "kernels": [kernel]})
    err = ctypes.create_string_buffer(1024)
    base = None
    while True:
        call = channel.receive()
        if call is None:
            return
        if base is None or channel.segment_id != base[0]:
            base = (channel.segment_id,
                    ctypes.addressof(ctypes.c_char.from_buffer(channel.segment)))
        tensors = [dl_tensor(base[1], t) for t in call["tensors"]]
        inputs = [ctypes.pointer(t) for t, d in zip(tensors, call["tensors"]) if not d["output"]]
        outputs = [ctypes.pointer(t) for t, d in zip(tensors, call["tensors"]) if d["output"]]
        rc = run[call["format"]]((ctypes.POINTER(DLTensor) * len(inputs))(*inputs), len(inputs),
                                 (ctypes.POINTER(DLTensor) * len(outputs))(*outputs),
                                 len(outputs), json.dumps(call["params"], separators=(",", ":")).encode(), err,
                                 len(err))
        answer = {"call": call["call"], "status": "done"}
        if rc != 0:
            answer = {"call": call["call"], "status": "error",
                      "message": f"returned {rc}: {err.value.decode(errors='replace')}"}
        channel.send(answer)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
