"""A pytest test that fails: PyTorch's attention with its causal mask off
by one (python/examples/kernels.py), certified through the fixture. Not
collected by `pytest python/examples`: pytest_report_check.py runs it to
read the report's last section."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                                "examples"))
import kernels  # noqa: E402


def test_mask_off_by_one(moacert_certify):
    moacert_certify("attention.fwd", kernels.attention_mask_off_by_one)
