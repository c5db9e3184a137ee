#!/usr/bin/python3
"""Validates certificates against docs/certificate.schema.json with a real
validator (Debian's python3-jsonschema, Draft 2020-12).

    validate_certificates.py SCHEMA [--newer-than FILE] PATH...
                                                every certificate.json in or at PATH
                                                (written after FILE: stale ones left
                                                by an older build are skipped; so are
                                                those under a folder holding a file
                                                PLANTED: faults tests plant on purpose)
    validate_certificates.py SCHEMA --plant CERTIFICATE
                                                the validator rejects faults
                                                planted in a valid certificate

Prints FILE: what is wrong for each invalid certificate and exits 1; exits 1
too when no certificate is found; 0 when every one is valid.
"""
import copy
import json
import os
import pathlib
import sys

import jsonschema


def problems(validator, document):
    if validator.is_valid(document):
        return []
    # The schema is oneOf(certificate, summary): say what is wrong against
    # the one the document means to be (a summary lists "variants").
    branch = "summary" if isinstance(document, dict) and "variants" in document else "certificate"
    schema = {k: v for k, v in validator.schema.items() if k != "oneOf"}
    schema["$ref"] = f"#/$defs/{branch}"
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    errors = sorted(errors or validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]


def planted(path):
    return any((folder / "PLANTED").exists() for folder in path.parents)


def written_since(path, since):
    # Other tests of the suite run beside this one (ctest -j) and remove
    # their output folders: a certificate that vanishes during the scan was
    # not this build's to judge. moacert writes each one atomically, so one
    # that is there is whole.
    try:
        return path.stat().st_mtime >= since
    except FileNotFoundError:
        return False


def found_under(folder):
    # os.walk, not Path.rglob: rglob raises when a folder it is about to
    # list has just been removed; walk skips it.
    for parent, _, files in os.walk(folder):
        if "certificate.json" in files:
            yield pathlib.Path(parent) / "certificate.json"


def certificates(paths, since):
    for p in map(pathlib.Path, paths):
        found = sorted(found_under(p)) if p.is_dir() else [p]
        yield from (f for f in found if written_since(f, since) and not planted(f))


def validate(validator, paths, since):
    found = bad = 0
    for path in certificates(paths, since):
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue  # removed since the scan found it (see written_since)
        found += 1
        try:
            document = json.loads(text)
        except ValueError as e:
            print(f"{path}: not JSON: {e}")
            bad += 1
            continue
        for p in problems(validator, document):
            print(f"{path}: {p}")
            bad += 1
    print(f"certificates: {found} validated, {bad} problem(s)")
    return 1 if bad or not found else 0


def plant(validator, path):
    good = json.loads(pathlib.Path(path).read_text())
    if problems(validator, good):
        print(f"{path}: not valid to start with")
        return 1
    missing = copy.deepcopy(good)
    del missing["verdict"]
    wrong_type = copy.deepcopy(good)
    wrong_type["seed"] = str(wrong_type["seed"])
    status = 0
    for name, document in (("missing verdict", missing), ("seed as a string", wrong_type)):
        found = problems(validator, document)
        if not found:
            print(f"planted {name}: NOT caught")
            status = 1
        else:
            print(f"planted {name}: caught: {found[0]}")
    return status


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    if sys.argv[2] == "--plant":
        return plant(validator, sys.argv[3])
    if sys.argv[2] == "--newer-than":
        return validate(validator, sys.argv[4:], pathlib.Path(sys.argv[3]).stat().st_mtime)
    return validate(validator, sys.argv[2:], 0)


if __name__ == "__main__":
    sys.exit(main())
