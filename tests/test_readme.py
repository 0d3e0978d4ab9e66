"""The README's commands are the ones CI runs."""
import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())
    assert len(commands) >= 2, "the README must give the run command and the test command"
    test_command = commands[1]
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_readme_python_examples_run():
    """Every block runs, and its dynamics converge: the README's states are regular."""
    import mechanics

    blocks = re.findall(r"```python\n(.+?)\n```", (ROOT / "README.md").read_text(), flags=re.S)
    assert blocks
    with warnings.catch_warnings():
        warnings.simplefilter("error", mechanics.ConvergenceWarning)
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})
