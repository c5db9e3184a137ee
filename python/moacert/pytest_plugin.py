"""pytest plugin: `--moacert-cases`, `--moacert-seed`, `--moacert-rule`, the
`moacert_certify` fixture, and a failing test's report ending with the
command that replays its counterexample, as a shell here runs it
(CertificationFailed.command: `--worker '...'` quoted for the shell, and
the moacert that certified by its path when it is not on PATH)."""

import functools

import pytest

from .certify import CertificationFailed, certify


def pytest_addoption(parser):
    group = parser.getgroup("moacert")
    group.addoption("--moacert-cases", type=int, default=None,
                    help="random cases per certification (moacert's default: 200)")
    group.addoption("--moacert-seed", default=None,
                    help="seed of the random cases (moacert's default: from the clock)")
    group.addoption("--moacert-rule", default=None,
                    help="apriori (default), max-ulp=K or vs-torch=R")


@pytest.fixture
def moacert_certify(request):
    """moacert.certify with the command line's --moacert-* options as defaults."""
    config = request.config
    defaults = {"cases": config.getoption("--moacert-cases"),
                "seed": config.getoption("--moacert-seed"),
                "rule": config.getoption("--moacert-rule")}

    @functools.wraps(certify)
    def run(op, fn, **kwargs):
        for key, value in defaults.items():
            if value is not None:
                kwargs.setdefault(key, value)
        return certify(op, fn, **kwargs)

    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and isinstance(call.excinfo.value, CertificationFailed):
        command = call.excinfo.value.command
        if command and hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection("moacert reproduce", command)
