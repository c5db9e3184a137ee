"""`moacert certify --junit FILE` checked against certify's own report.

    junit_check.py EXPECTED_RC JUNIT_FILE MOACERT ARGS...

runs MOACERT ARGS... --junit JUNIT_FILE, which must exit EXPECTED_RC, and
parses the file as XML (xml.etree: a document that is not well-formed
fails here). Each line `OP VARIANT FORMAT: holds|FAILS (...)` that certify
prints must be one <testcase name="VARIANT.FORMAT">, with a <failure>
exactly when it FAILS, whose message carries the counterexample's
`reproduce: moacert reproduce TOKEN` line as certify printed it; the
suite's counts must add up."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def fail(why, out=""):
    sys.exit(f"junit_check: {why}\n{out}")


expected_rc, junit, moacert, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
if os.path.exists(junit):
    os.remove(junit)
run = subprocess.run([moacert, *args, "--junit", junit], capture_output=True, text=True)
out = run.stdout + run.stderr
if run.returncode != expected_rc:
    fail(f"exit {run.returncode}, expected {expected_rc}", out)

verdicts = re.findall(r"^\S+ (\S+) (\S+): (holds|FAILS) \(", run.stdout, re.M)
# The whole command (a plugin's names its library: --plugin LIB.so#NAME).
reproduce = re.findall(r"^reproduce: (moacert reproduce mc1\.\S+.*)$", run.stdout, re.M)
if not verdicts:
    fail("certify printed no verdict", out)

root = ET.parse(junit).getroot()
if root.tag != "testsuites" or len(root) != 1 or root[0].tag != "testsuite":
    fail(f"not one <testsuite> in <testsuites>: {ET.tostring(root)[:200]}")
suite = root[0]
cases = suite.findall("testcase")
names = [c.get("name") for c in cases]
if names != [f"{v}.{f}" for v, f, _ in verdicts]:
    fail(f"test cases {names}, certify certified {verdicts}", out)
failures = [c.find("failure") for c in cases]
tokens = iter(reproduce)
for (variant, fmt, verdict), failure in zip(verdicts, failures):
    if (failure is not None) != (verdict == "FAILS"):
        fail(f"{variant}.{fmt} {verdict}, but its test case has failure={failure is not None}")
    if failure is not None:
        token = next(tokens, None)
        if token is None:
            fail(f"{variant}.{fmt} failed without a reproduce line", out)
        line = f"reproduce: {token}"
        if line not in failure.get("message", "") or line not in (failure.text or ""):
            fail(f"the failure of {variant}.{fmt} lacks '{line}': {failure.get('message')!r}")
n_fail = sum(f is not None for f in failures)
for node in (root, suite):
    if node.get("tests") != str(len(cases)) or node.get("failures") != str(n_fail):
        fail(f"<{node.tag}> counts tests={node.get('tests')} failures={node.get('failures')}, "
             f"the file holds {len(cases)} and {n_fail}")
print(f"junit_check: {len(cases)} test cases, {n_fail} failures, tokens {reproduce}")
