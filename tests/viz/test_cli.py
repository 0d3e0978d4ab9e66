"""The gaussgraph command, run as a user would (subprocess on the installed console script)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mechanics.pinocchio_io import ROBOTS, example_robot_data_dir

SCRIPT = Path(sys.executable).with_name("gaussgraph")


def gaussgraph(*args, cwd=None):
    assert SCRIPT.exists(), f"console script missing at {SCRIPT}: is the package installed?"
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_no_argument_compares_algorithms_on_the_fig4_mechanism(tmp_path):
    result = gaussgraph(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "fig4" in lines[0] and lines[1].startswith("algorithm")
    assert {line.split()[0] for line in lines[2:-1]} >= {"pv", "proxbbo", "lcaba", "proxltl", "min_fill"}


def test_compare_a_urdf_with_json_and_csv(tmp_path):
    urdf = example_robot_data_dir() / ROBOTS["ur5"][0]
    result = gaussgraph("compare", urdf, "--algorithms", "aba,proxbbo", "--repeat", "1",
                        "--json", tmp_path / "t.json", "--csv", tmp_path / "t.csv")
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert [r["algorithm"] for r in rows] == ["aba", "proxbbo"] and rows[0]["deviation"] < 1e-9
    assert (tmp_path / "t.csv").read_text().count("\n") == 3


def test_compare_a_sized_builtin_and_render(tmp_path):
    result = gaussgraph("compare", "chain_of_loops:loops=2", "--algorithms", "lcaba", "--repeat", "1", "--render", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mechanism.dot").exists() and (tmp_path / "lcaba" / "overview.dot").exists()


def test_list_and_render_and_scale(tmp_path):
    listing = gaussgraph("list")
    assert listing.returncode == 0 and "chain_of_loops" in listing.stdout and "proxbbo" in listing.stdout
    render = gaussgraph("render", "four_bar", "--algorithm", "proxbbo", "--out", tmp_path, "--format", "svg")
    assert render.returncode == 0, render.stderr
    assert (tmp_path / "proxbbo" / "frame_00.svg").exists() and (tmp_path / "factor_graph_prox.svg").exists()
    scale = gaussgraph("scale", "cycle", "--sizes", "7,8", "--algorithms", "proxbbo", "--plot", tmp_path / "s.png")
    assert scale.returncode == 0, scale.stderr
    assert (tmp_path / "s.png").exists() and "[####" in scale.stderr  # the progress bar


@pytest.mark.parametrize(
    "args, message",
    [
        (("compare", "tetrahedron"), "unknown mechanism 'tetrahedron'; built-ins: branching"),
        (("compare", "fig4", "--algorithms", "aba2"), "unknown algorithm 'aba2'; choose from aba"),
        (("compare", "missing.urdf"), "no such file: missing.urdf"),
        (("compare", "cycle:n=1"), "n must be an int >= 2"),
        (("compare", "cycle:n=big"), "'big' is not a number"),
        (("compare", "cycle:rungs=3"), "cycle has no parameter 'rungs'; its parameters: n"),
        (("render", "fig4", "--algorithm", "nope", "--out", "x"), "unknown algorithm 'nope'"),
        (("scale", "fig4", "--sizes", "a,b"), "scale needs|--sizes"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_status_2(args, message, tmp_path):
    result = gaussgraph(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "gaussgraph: error:" in result.stderr and re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    result = gaussgraph("render", "four_bar", "--out", blocker / "pictures")
    assert result.returncode == 2 and "cannot write to" in result.stderr and "Traceback" not in result.stderr


def test_help_texts():
    for args in (("--help",), ("compare", "--help"), ("scale", "--help")):
        result = gaussgraph(*args)
        assert result.returncode == 0 and "usage: gaussgraph" in result.stdout


BAR_PINNED_AT_ITS_TIP = """<mujoco model="bar"><worldbody>
  <body name="crank"><joint name="j1" type="hinge" axis="0 0 1"/><geom type="capsule" fromto="0 0 0 1 0 0" size="0.05" mass="1"/>
    <body name="rod" pos="1 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 1 0 0" size="0.05" mass="1"/></body></body>
</worldbody><equality><connect body1="rod" anchor="1 0 0"/></equality></mujoco>"""


def test_compare_notes_runs_that_did_not_converge(tmp_path, capsys):
    """Two hinges cannot keep the rod's tip still while moving: every iterative and soft row says so.

    Run in-process (``viz.cli.main``) so that it exercises this checkout, not an installed copy.
    """
    from viz.cli import main

    path = tmp_path / "bar.xml"
    path.write_text(BAR_PINNED_AT_ITS_TIP)
    assert main(["compare", str(path), "--algorithms", "proxbbo,lcaba,pv_soft,pv", "--repeat", "1",
                 "--json", str(tmp_path / "t.json")]) == 0
    table = capsys.readouterr().out
    rows = {r["algorithm"]: r for r in json.loads((tmp_path / "t.json").read_text())["rows"]}
    for name in ("proxbbo", "lcaba", "pv_soft"):
        assert rows[name]["note"] == f"not converged (residual {rows[name]['residual']:.1e})", rows[name]
        assert rows[name]["note"] in table
    assert rows["pv"]["note"].startswith("singular")
