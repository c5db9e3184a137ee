#!/usr/bin/env python3
"""Checks docs/design.md's include rules ("Who may include whom") over the
source tree: every quoted #include of a project folder from a file in a
ruled folder must be allowed for that folder. Prints FILE:LINE and the rule
for each violation and exits 1; exits 0 when there is none.

    include_rules.py ROOT
"""
import pathlib
import re
import sys

# The project's top-level folders: a quoted include of anything else
# ("hwy/foreach_target.h", "dlpack/dlpack.h") is a third party's.
PROJECT = {"reference", "oracle", "kernels", "properties", "results", "reports", "cli",
           "bench", "simt", "include", "tests", "fuzz", "examples", "files", "adapters"}

# folder -> (include prefixes it may use, the rule in words)
RULES = {
    "reference": (["reference/"], "reference/ includes nothing else of the project"),
    "oracle": (["oracle/", "reference/"], "oracle/ includes only reference/"),
    "kernels": (["kernels/", "reference/", "include/moacert/"],
                "kernels/ include reference/ and include/moacert/, never oracle/ "
                "(a kernel cannot see the answer), properties/, reports/ or cli/"),
    "properties": (["properties/", "oracle/", "kernels/", "reference/", "results/",
                    "include/moacert/"],
                   "properties/ includes oracle/, kernels/, reference/, results/ and "
                   "include/moacert/ only"),
    "results": (["results/", "reference/"], "results/ includes only reference/"),
    "reports": (["reports/", "reference/", "results/", "files/"],
                "reports/ reads results/ and reference/, and may use files/, never "
                "kernels/, oracle/ or the property engine (properties/)"),
    "files": (["files/"], "files/ includes nothing else of the project"),
    "simt": (["simt/", "include/moacert/"],
             "simt/ includes nothing of the project but include/moacert/"),
    "include": (["include/moacert/"],
                "include/moacert/ (public headers) includes nothing else of the project"),
    "examples": (["include/moacert/", "examples/"],
                 "examples/ build against the installed headers (include/moacert/) alone"),
    "adapters": (["include/moacert/", "adapters/"],
                 "adapters/ are plugins: the installed headers (include/moacert/) and their own"),
}
# Folders that may include anything of the project but cli/ (the command
# composes the libraries; nothing is built on top of it).
NOT_CLI = ["bench", "tests", "fuzz", "reference", "oracle", "kernels", "properties", "results",
           "reports", "simt", "include", "examples", "files", "adapters"]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Heavy headers stay in their rooms: each is included by its one adaptor.
ADAPTORS = {"mpi.h": "cli/mpi_ranks.cpp"}
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCES = {".hpp", ".h", ".cpp", ".cc", ".cu", ".cuh", ".c", ".inl"}


def rules():
    for folder in NOT_CLI:
        allowed, rule = RULES.get(folder, ([f + "/" for f in PROJECT if f != "cli"], ""))
        yield folder, allowed, rule or f"{folder}/ includes nothing of cli/ (only cli/ composes)"


def source_lines(root: pathlib.Path, folder: str):
    """(path, line number, line) of every source file under root/folder."""
    base = root / folder
    if not base.is_dir():
        return
    for path in sorted(base.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            yield path, number, line


def violations(root: pathlib.Path):
    for folder, allowed, rule in rules():
        for path, number, line in source_lines(root, folder):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if target.split("/", 1)[0] not in PROJECT or "/" not in target:
                continue  # a third party's header, or one beside the file
            if not any(target.startswith(a) for a in allowed):
                yield f"{path.relative_to(root)}:{number}: includes \"{target}\": {rule}"


def adaptor_violations(root: pathlib.Path):
    for folder in sorted(PROJECT):
        for path, number, line in source_lines(root, folder):
            m = ANY_INCLUDE.match(line)
            adaptor = ADAPTORS.get(m.group(1)) if m else None
            if adaptor and path.relative_to(root).as_posix() != adaptor:
                yield (f"{path.relative_to(root)}:{number}: includes <{m.group(1)}>, "
                       f"which only {adaptor} includes")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    found = list(violations(root)) + list(adaptor_violations(root))
    for v in found:
        print(v)
    print(f"include rules: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
