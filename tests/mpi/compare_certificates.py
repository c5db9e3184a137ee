"""Two certificates compared field by field, apart from the fields that
differ between any two runs (docs/hpc.md#identical-certificates):

    compare_certificates.py A B     each a certificate.json, or a certify --out
                                    folder (its certificate.json and every
                                    VARIANT/certificate.json in it)

Excluded, and why:
  seconds, seconds_by_phase   wall time: two runs never take the same time
  provenance.date             when it ran
  provenance.command_line     the runs' --out folders differ
Everything else must be equal: values of the same type, numbers bit for bit
(JSON written by the same build), the same keys in every object, lists of
the same length in the same order. Exit 1 naming each field that differs."""
import json
import os
import sys

EXCLUDED = {("seconds",), ("seconds_by_phase",), ("provenance", "date"),
            ("provenance", "command_line")}


def differences(a, b, path=()):
    if path in EXCLUDED:
        return
    where = ".".join(map(str, path)) or "(the document)"
    if type(a) is not type(b):
        yield f"{where}: {a!r} vs {b!r}"
    elif isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if (*path, key) in EXCLUDED:
                continue
            if key not in a or key not in b:
                yield f"{where}.{key}: only in {'the first' if key in a else 'the second'}"
            else:
                yield from differences(a[key], b[key], (*path, key))
    elif isinstance(a, list):
        if len(a) != len(b):
            yield f"{where}: {len(a)} entries vs {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, (*path, k))
    elif a != b:
        yield f"{where}: {a!r} vs {b!r}"


def certificates(root):
    """The certificate files under a --out folder, by their path in it."""
    if os.path.isfile(root):
        return {"certificate.json": root}
    found = {}
    for folder, _, files in os.walk(root):
        if "certificate.json" in files:
            found[os.path.relpath(os.path.join(folder, "certificate.json"), root)] = \
                os.path.join(folder, "certificate.json")
    return found


a, b = certificates(sys.argv[1]), certificates(sys.argv[2])
if not a or set(a) != set(b):
    sys.exit(f"compare_certificates: certificates {sorted(a)} vs {sorted(b)}")
bad = []
for name in sorted(a):
    with open(a[name]) as fa, open(b[name]) as fb:
        bad += [f"{name}: {d}" for d in differences(json.load(fa), json.load(fb))]
if bad:
    sys.exit("compare_certificates: the certificates differ:\n  " + "\n  ".join(bad))
print(f"compare_certificates: {len(a)} certificates equal field by field "
      f"(apart from {', '.join('.'.join(e) for e in sorted(EXCLUDED))})")
