import shutil

import pytest

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is not installed here (apt-get install graphviz); .ci/run installs it and runs this test",
)
"""Marks a test that renders through Graphviz's ``dot``: skipped, with the reason, where it is absent."""
