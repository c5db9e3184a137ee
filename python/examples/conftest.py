# The moacert pytest plugin, from the source tree (an installed package
# registers it by its pytest11 entry point instead).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
if "moacert.pytest_plugin" not in sys.modules:
    pytest_plugins = ["moacert.pytest_plugin"]
