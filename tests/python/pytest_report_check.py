"""A failing moacert test's pytest report ends with the command that
replays its counterexample, exactly as a user copies it: the line of the
last section, `moacert reproduce`, run by a shell from another folder, with
the worker's command quoted, replays the failure (exit 1, FAILS).

    python3 pytest_report_check.py        (MOACERT: the moacert to use)
"""

import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
python_dir = os.path.join(here, "..", "..", "python")
env = dict(os.environ, PYTHONPATH=os.path.abspath(python_dir), PYTHONDONTWRITEBYTECODE="1")

with tempfile.TemporaryDirectory(prefix="moacert-pytest-") as elsewhere:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "moacert.pytest_plugin", os.path.join(here, "planted_mask_test.py"),
         "--moacert-cases", "5", "--moacert-seed", "1"],
        capture_output=True, text=True, env=env, cwd=elsewhere)
    out = run.stdout
    assert run.returncode == 1, f"pytest exited {run.returncode}\n{out}{run.stderr}"
    lines = out.splitlines()
    sections = [i for i, l in enumerate(lines) if re.fullmatch(r"-+ moacert reproduce -+", l)]
    assert len(sections) == 1, f"no 'moacert reproduce' section:\n{out}"
    command = lines[sections[0] + 1]
    # The section is the failure's last: pytest's summary follows it.
    assert lines[sections[0] + 2].startswith("="), f"the section is not the report's last:\n{out}"
    assert re.match(r"\S*moacert reproduce mc1\.[A-Za-z0-9_-]+ --worker '[^']+'$", command), command
    replay = subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=elsewhere,
                            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert replay.returncode == 1, f"{command}\nexited {replay.returncode}\n{replay.stdout}{replay.stderr}"
    assert "worker:attention_mask_off_by_one, rule apriori: FAILS" in replay.stdout, replay.stdout
print("the report's last section replays the failure:", command)
