"""The gaussgraph command, run as a user would (subprocess on the installed console script)."""
import fcntl
import io
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from mechanics.pinocchio_io import ROBOTS, example_robot_data_dir
from tests.viz import needs_dot

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


@needs_dot
def test_render_writes_svg_pictures(tmp_path):
    render = gaussgraph("render", "four_bar", "--algorithm", "proxbbo", "--out", tmp_path, "--format", "svg")
    assert render.returncode == 0, render.stderr
    assert list((tmp_path / "proxbbo").glob("step_*.svg")) and (tmp_path / "factor_graph_prox.svg").exists()


def test_list_and_scale(tmp_path):
    listing = gaussgraph("list")
    assert listing.returncode == 0 and "chain_of_loops" in listing.stdout and "proxbbo" in listing.stdout
    scale = gaussgraph("scale", "cycle", "--sizes", "7,8", "--algorithms", "proxbbo", "--plot", tmp_path / "s.png")
    assert scale.returncode == 0, scale.stderr
    assert (tmp_path / "s.png").exists() and scale.stderr == ""  # no progress when stderr is not a terminal


@pytest.mark.parametrize(
    "args, message",
    [
        (("compare", "tetrahedron"), "unknown mechanism 'tetrahedron'; built-ins: belt_chain, branching"),
        (("compare", "fig4", "--algorithms", "aba2"), "unknown algorithm 'aba2'; choose from aba"),
        (("compare", "missing.urdf"), "no such file: missing.urdf"),
        (("compare", "cycle:n=1"), "n must be an int >= 2"),
        (("compare", "cycle:n=big"), "'big' is not a number, true or false"),
        (("compare", "cycle:rungs=3"), "cycle has no parameter 'rungs'; its parameters: n"),
        (("render", "fig4", "--algorithm", "nope", "--out", "x"), "unknown algorithm 'nope'"),
        (("scale", "fig4", "--sizes", "a,b"), "scale needs|--sizes"),
        (("lst",), r"unknown command 'lst' \(did you mean list\?\); choose from compare, list, render, scale, warmup"),
        (("compare", "solo12", "--contact", "FL_FOT"), r"'solo12' has no frame or link 'FL_FOT'; did you mean FL_FOOT"),
        (("compare", "solo12", "--contact", "FL_FOOT:hinge"), r"--contact 'FL_FOOT:hinge': unknown contact kind "
                                                              r"'hinge' \(point \| weld\)$"),
        (("compare", "four_bar:crank=-1"), r"four_bar: crank must be a finite number > 0, got -1$"),
        (("scale", "four_bar", "--param", "base", "--sizes", "0"), r"four_bar: base must be a finite number > 0, "
                                                                    r"got 0$"),
        (("compare", "robotx"), r"unknown mechanism 'robotx'; built-ins: .*; robots \(the robots extra\): .*talos"),
        (("compare", "fig4", "--json", "no/such/folder/t.json"), "cannot write no/such/folder/t.json: no folder"),
        (("scale", "cycle", "--sizes", "7", "--json", "no/such/folder/t.json"), "cannot write .*: no folder"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_status_2(args, message, tmp_path):
    result = gaussgraph(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "gaussgraph: error:" in result.stderr and re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_compare_a_robot_by_name_with_contacts_on_its_frames(tmp_path):
    result = gaussgraph("compare", "solo12", "--contact", "FL_FOOT", "--contact", "HR_FOOT:point", "--contact",
                        "base_link:weld", "--algorithms", "proxbbo,lcaba", "--repeat", "1", "--json", tmp_path / "t.json")
    assert result.returncode == 0, result.stderr
    assert "Mechanism('solo12': 13 links, nq=19, nv=18, 3 constraints, m=12)" in result.stdout
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert [r["algorithm"] for r in rows] == ["proxbbo", "lcaba"] and all(r["deviation"] < 1e-8 for r in rows)


@pytest.mark.parametrize("flag, constraints", [("true", "16 constraints"), ("False", "12 constraints")])
def test_compare_a_built_in_with_a_true_or_false_parameter(flag, constraints, tmp_path):
    """``gaussgraph list`` shows ``mini_cheetah [contacts=False]``: a flag's value reads as written there (its 12
    rotor couplings, and with ``contacts=true`` the four feet)."""
    result = gaussgraph("compare", f"mini_cheetah:contacts={flag}", "--algorithms", "proxbbo", "--repeat", "1",
                        "--json", tmp_path / "t.json")
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert rows[0]["deviation"] < 1e-8 and constraints in result.stdout, result.stdout


@pytest.mark.parametrize("model, constraints", [("geared_chain", "12 constraints"), ("belt_chain", "12 constraints"),
                                                ("tello_leg", "4 constraints")])
def test_compare_the_coupled_built_ins(model, constraints, tmp_path):
    """The geared, belt-driven and differential built-ins (their couplings as constraints) run from the command
    line, each algorithm beside the dense solve."""
    result = gaussgraph("compare", model, "--algorithms", "proxbbo,pv", "--repeat", "1", "--json", tmp_path / "t.json")
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert [r["algorithm"] for r in rows] == ["proxbbo", "pv"] and all(r["deviation"] < 1e-8 for r in rows), rows
    assert constraints in result.stdout, result.stdout


def test_a_plot_without_matplotlib_is_refused_before_the_run(monkeypatch, tmp_path, capsys):
    import importlib.util

    import viz.compare
    from viz import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(viz.compare, "scale", lambda *a, **k: pytest.fail("the sweep ran"))
    assert cli.main(["scale", "cycle", "--sizes", "7", "--plot", str(tmp_path / "s.png")]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib: pip install matplotlib" in err and "'.[plot]'" in err and "gaussgraph[" not in err


def test_the_talos_command_of_the_issue_runs_and_agrees_with_the_dense_solve(tmp_path):
    result = gaussgraph("compare", "talos", "--floating-base", "--contact", "left_sole_link:weld", "--contact",
                        "right_sole_link:weld", "--algorithms", "proxbbo,lcaba,pv", "--repeat", "1", "--json",
                        tmp_path / "t.json")
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "t.json").read_text())["rows"]
    assert [r["algorithm"] for r in rows] == ["proxbbo", "lcaba", "pv"] and all(r["deviation"] < 1e-8 for r in rows)


def test_list_says_what_the_paper_codes_are_in_plain_text():
    from mechanics.algorithms import PAPERS

    listing = gaussgraph("list")
    assert listing.returncode == 0 and "``" not in listing.stdout
    for code in ("000", "001", "002"):
        assert f"  {code}  {PAPERS[code]}" in listing.stdout
    worst_case = next(line for line in listing.stdout.splitlines() if line.strip().startswith("worst_case"))
    assert "(000 Fig. 8)" in worst_case and "all loops share the chain's joints." in worst_case


def test_version_case_insensitive_names_and_positive_repeats(tmp_path):
    from factorgraph import __version__

    version = gaussgraph("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"gaussgraph {__version__}" != "gaussgraph unknown"
    upper = gaussgraph("compare", "four_bar", "--algorithms", "LCABA,ProxBBO", "--repeat", "1", cwd=tmp_path)
    assert upper.returncode == 0, upper.stderr
    assert [line.split()[0] for line in upper.stdout.splitlines()[2:4]] == ["lcaba", "proxbbo"]
    rendered = gaussgraph("render", "four_bar", "--algorithm", "LCABA", "--out", tmp_path / "pictures", "--format", "dot")
    assert rendered.returncode == 0 and (tmp_path / "pictures" / "lcaba").is_dir(), rendered.stderr
    zero = gaussgraph("compare", "four_bar", "--repeat", "0", cwd=tmp_path)
    assert zero.returncode == 2 and "--repeat: expected an int >= 1, got 0" in zero.stderr


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path):
    """`gaussgraph compare | head -1`: no BrokenPipeError traceback, exit status 0."""
    proc = subprocess.Popen([str(SCRIPT), "compare", "four_bar", "--repeat", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    first = proc.stdout.readline()
    proc.stdout.close()
    status = proc.wait(timeout=600)
    assert first.startswith("Mechanism(") and status == 0
    assert "Error" not in proc.stderr.read()


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    result = gaussgraph("render", "four_bar", "--out", blocker / "pictures")
    assert result.returncode == 2 and "cannot write to" in result.stderr and "Traceback" not in result.stderr


def test_help_texts():
    for args in (("--help",), ("compare", "--help"), ("scale", "--help")):
        result = gaussgraph(*args)
        assert result.returncode == 0 and "usage: gaussgraph" in result.stdout


def test_every_option_of_every_command_has_help():
    import argparse

    from viz.cli import parser

    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, command in commands.items():
        for action in command._actions:
            assert action.help, f"gaussgraph {name} {'/'.join(action.option_strings) or action.dest} has no help"


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
        assert rows[name]["note"] == (f"not converged (residual {rows[name]['residual']:.1e}): inconsistent -- fix "
                                      "the constraints or the velocities"), rows[name]
        assert rows[name]["note"] in table
    # pv's note says why (the rows contradict each other: the iterative rows above keep a residual) and what helps
    assert rows["pv"]["note"].startswith("pv: the hard policy cannot solve 'bar' -- its constraints contradict each "
                                         "other at this state; correct or remove the contradicting constraints")
    assert rows["pv"]["note"] in table


def test_a_refused_algorithm_is_noted_with_its_name_the_reason_and_a_fix_that_works(tmp_path, capsys):
    """A point contact at the rocker's ground pivot repeats what its joint already holds: the hard policy
    refuses; the note names pv as the user wrote it, says why, and points to proxpv, which then solves it."""
    from viz.cli import main

    assert main(["compare", "four_bar", "--contact", "rocker", "--algorithms", "PV,proxpv", "--repeat", "1",
                 "--json", str(tmp_path / "t.json")]) == 0
    table = capsys.readouterr().out
    rows = {r["algorithm"]: r for r in json.loads((tmp_path / "t.json").read_text())["rows"]}
    assert rows["pv"]["note"] == ("pv: the hard policy cannot solve 'four_bar' -- its constraints are dependent at "
                                  "this state; use proxpv or another prox algorithm (proxbbo, proxltl)")
    assert rows["pv"]["seconds"] is None and f"[1] {rows['pv']['note']}" in table.splitlines()
    assert rows["proxpv"]["seconds"] is not None and "not converged" not in rows["proxpv"]["note"]


def test_scale_notes_every_empty_cell_in_the_table_and_in_the_plot_legend(tmp_path, capsys, monkeypatch):
    """cycle(5): a weld on four joints has dependent rows, which pv refuses; aba does not apply to a loop."""
    import matplotlib.figure

    from viz.cli import main

    legends = []
    save = matplotlib.figure.Figure.savefig

    def keep_legends(figure, *args, **kwargs):
        legends.append([[t.get_text() for t in axis.get_legend().get_texts()] for axis in figure.axes])
        return save(figure, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep_legends)
    assert main(["scale", "cycle", "--sizes", "5,8", "--algorithms", "pv,proxbbo,aba", "--repeat", "1",
                 "--plot", str(tmp_path / "s.png"), "--json", str(tmp_path / "s.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    points = json.loads((tmp_path / "s.json").read_text())
    empty = [p for p in points if p["seconds"] is None]
    assert {(p["size"], p["algorithm"]) for p in empty} >= {(5, "pv"), (5, "aba"), (8, "aba")}
    for p in empty:  # its row carries a mark, and the mark's footnote is the point's note
        row = next(line for line in lines if line.split()[:2] == [str(p["size"]), p["algorithm"]])
        mark = row.split()[-1]
        assert re.fullmatch(r"\[\d+\]", mark) and f"{mark} {p['note']}" in lines
        assert p["note"].startswith(p["algorithm"])
    time_legend = " ".join(legends[0][0]).replace("\n", " ")
    assert "pv (no point at 5: the hard policy cannot solve it --" in time_legend
    assert "aba (no point at 5, 8: aba solves a kinematic tree" in time_legend
    assert (tmp_path / "s.png").exists()


MALFORMED_URDF = """<robot name="arm"><link name="base"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper_arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_a_malformed_urdf_is_one_line_with_the_parsers_cause(tmp_path, capsys):
    from viz.cli import main

    path = tmp_path / "arm.urdf"
    path.write_text(MALFORMED_URDF)
    assert main(["compare", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"gaussgraph: error: {path}: cannot read this URDF file: Failed to build tree: child link " \
                  "[upper_arm] of joint [shoulder] not found\n"


LINK_WITH_A_COLON = """<robot name="arm"><link name="base"/>
  <link name="tool:tip"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="tool:tip"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_a_contact_on_a_frame_whose_name_holds_a_colon(tmp_path, capsys):
    """``tool:tip`` is a link, not the link ``tool`` with a contact kind ``tip``; ``tool:tip:hinge`` is a bad kind."""
    from viz.cli import main

    path = tmp_path / "arm.urdf"
    path.write_text(LINK_WITH_A_COLON)
    assert main(["compare", str(path), "--contact", "tool:tip", "--algorithms", "proxbbo", "--repeat", "1"]) == 0
    assert "1 constraints" in capsys.readouterr().out
    assert main(["compare", str(path), "--contact", "tool:tip:hinge"]) == 2
    assert "unknown contact kind 'hinge' (point | weld)" in capsys.readouterr().err


def test_render_with_out_and_html_writes_both_and_html_alone_only_the_page(tmp_path, capsys, monkeypatch):
    from viz.cli import main

    monkeypatch.chdir(tmp_path)
    both = ["render", "four_bar", "--algorithm", "proxbbo", "--format", "dot"]
    assert main(both + ["--out", "frames", "--html", "both.html"]) == 0
    assert (tmp_path / "both.html").is_file() and (tmp_path / "frames" / "proxbbo" / "overview.dot").is_file()
    out = capsys.readouterr().out
    assert "page written to both.html" in out and "files written to frames" in out
    assert main(both + ["--html", "alone.html"]) == 0
    assert (tmp_path / "alone.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alone.html", "both.html", "frames"]  # no folder of frames


def test_list_reads_as_plain_sentences():
    """The docstrings' first sentences lose their literals (````loops````): no word may then come twice in a row."""
    listing = gaussgraph("list")
    assert listing.returncode == 0
    doubled = [line for line in listing.stdout.splitlines() if re.search(r"\b(\w+) \1\b", line)]
    assert doubled == []


# -- progress and interruption ------------------------------------------------------------------

def _sigint_default():
    """In the child: SIGINT back to its default action.  A shell without job control starts background
    commands (e.g. ``pytest &`` in a script) with SIGINT ignored, and children inherit that; Python then
    never raises KeyboardInterrupt, and the Ctrl-C tests below would test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def gaussgraph_on_a_terminal(*args, interrupt_after: str | None = None, columns: int = 120):
    """Run with stderr on a pseudo-terminal (stdout stays a pipe); return ``(status, stdout, stderr)``.

    With ``interrupt_after``, send SIGINT once that text has appeared on stderr.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([str(SCRIPT), *map(str, args)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, text=True, preexec_fn=_sigint_default)
    os.close(slave)
    received = []

    def pump():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the command has closed the terminal
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if interrupt_after is not None:
            while interrupt_after.encode() not in b"".join(received) and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
        reader.join(10)
        os.close(master)
    return proc.returncode, stdout, b"".join(received).decode(errors="replace")


def screen_lines(stderr: str) -> list:
    """What stays on the terminal, roughly: the text after the last carriage return of each line."""
    return [line.split("\r")[-1] for line in stderr.replace("\r\n", "\n").split("\n") if line.split("\r")[-1].strip()]


def test_compare_shows_each_algorithm_being_planned_and_solved_on_stderr_only():
    status, stdout, stderr = gaussgraph_on_a_terminal("compare", "fig4", "--algorithms", "lcaba,proxltl", "--repeat", "1")
    assert status == 0, stderr
    for text in ("building fig4", "dense reference solve", "planning lcaba", "solving lcaba", "timing lcaba",
                 "planning proxltl", "0/2 |", "1/2 |"):
        assert text in stderr, (text, stderr)
    assert stdout.splitlines()[1].startswith("algorithm") and "planning" not in stdout and "\r" not in stdout
    assert screen_lines(stderr) == []  # the bar is cleared when done


def test_quiet_and_pipes_show_no_progress():
    status, stdout, stderr = gaussgraph_on_a_terminal("compare", "fig4", "--algorithms", "lcaba", "--repeat", "1", "-q")
    assert status == 0 and stderr == "" and "lcaba" in stdout
    piped = gaussgraph("compare", "fig4", "--algorithms", "lcaba", "--repeat", "1")
    assert piped.returncode == 0 and piped.stderr == ""


def test_scale_moves_its_bar_per_algorithm_within_a_size():
    status, stdout, stderr = gaussgraph_on_a_terminal("scale", "cycle", "--sizes", "7,8", "--algorithms", "proxbbo,lcaba",
                                                      "--repeat", "1")
    assert status == 0, stderr
    frames = stderr.split("\r")
    assert any(f.startswith("1/4 |") and "n=7: planning lcaba" in f for f in frames), frames  # moved inside size 7
    assert any(f.startswith("3/4 |") and "n=8: planning lcaba" in f for f in frames), frames
    assert stdout.split()[:4] == ["size", "algorithm", "flops", "ms/solve"]


def test_render_counts_its_pictures(tmp_path):
    status, stdout, stderr = gaussgraph_on_a_terminal("render", "four_bar", "--algorithm", "proxbbo", "--out", tmp_path)
    assert status == 0, stderr
    assert "planning proxbbo" in stderr and re.search(r"drawing proxbbo \(1 of \d+\)", stderr), stderr
    assert stdout.endswith(f"files written to {tmp_path} (proxbbo)\n")


def test_render_without_an_algorithm_draws_every_one_that_applies_into_a_folder_named_after_it(tmp_path):
    result = gaussgraph("render", "four_bar", "--format", "dot", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "four_bar"
    drawn = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert drawn == sorted(["pv", "proxpv", "proxbbo", "lcaba", "pv_soft", "proxltl", "min_degree", "min_fill", "caba"])
    assert (folder / "mechanism.dot").exists() and (folder / "factor_graph_prox.dot").exists()
    assert (folder / "factor_graph_embed.dot").exists()  # (the four-bar's loop embedded: y, no multiplier)
    assert 'label="y crank"' in (folder / "factor_graph_embed.dot").read_text()
    assert result.stdout.strip().endswith(
        "(pv, proxpv, proxbbo, lcaba, pv_soft, proxltl, min_degree, min_fill, caba)")


def test_ctrl_c_ends_with_one_line_and_status_130():
    """SIGINT a second into a long run (a million timed solves per algorithm): whatever it was doing then --
    loading the library, planning, in a LAPACK call -- it ends with one line on stderr and status 130."""
    proc = subprocess.Popen([str(SCRIPT), "compare", "fig4", "--repeat", "1000000"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)
    try:
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert (proc.returncode, stdout, stderr) == (130, "", "gaussgraph: interrupted\n")


CTRL_C_IN_A_C_CALLBACK = """
import ctypes, signal, time
from viz.cli import Interruption

def callback():
    signal.raise_signal(signal.SIGINT)  # Ctrl-C lands while C code runs this callback (as in numba's compiler)
    time.sleep(0.01)  # the handler raises here, inside the callback, where Python cannot propagate it

with Interruption():
    ctypes.CFUNCTYPE(None)(callback)()
    time.sleep(30)
"""


def test_ctrl_c_inside_a_c_callback_still_ends_with_one_line_and_status_130():
    """A KeyboardInterrupt raised inside a C callback is 'unraisable': Python would print 'Exception ignored ...'
    and go on. The watcher ends the process instead, with the one line (CI caught this during a numba compile)."""
    result = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_C_CALLBACK], capture_output=True, text=True,
                            timeout=60, preexec_fn=_sigint_default, cwd=Path(__file__).parents[2])
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "gaussgraph: interrupted\n")


def test_ctrl_c_while_planning_on_a_terminal_clears_the_bar_and_says_one_line():
    status, stdout, stderr = gaussgraph_on_a_terminal("compare", "chain_of_loops:loops=20,links_per_loop=7", "--repeat", "1",
                                                      interrupt_after="planning")
    assert status == 130 and stdout == ""
    assert screen_lines(stderr) == ["gaussgraph: interrupted"] and "Traceback" not in stderr


def test_compare_and_scale_report_their_steps():
    """The hooks the progress bar reads: every phase of every algorithm, in order, and the sweep's sizes."""
    from mechanics import models
    from viz import compare as cmp

    steps = []
    rows = cmp.compare(models.four_bar(), ["proxbbo", "aba"], repeat=1, on_step=steps.append)
    assert [r.algorithm for r in rows] == ["proxbbo", "aba"]
    assert [(s.phase, s.algorithm) for s in steps] == [
        ("reference", None), ("planning", "proxbbo"), ("solving", "proxbbo"), ("timing", "proxbbo"), ("done", "proxbbo"),
        ("done", "aba"),  # aba does not apply to a loop: no planning
    ]
    assert {(s.index, s.total) for s in steps if s.algorithm == "aba"} == {(1, 2)}
    sweep, bar = [], io.StringIO()
    points = cmp.scale("cycle", "n", [7, 8], ["lcaba"], repeat=1, progress=bar, on_step=sweep.append)
    assert [p["size"] for p in points] == [7, 8]
    assert [(s.size, s.phase) for s in sweep if s.phase in ("building", "done")] == [(7, "building"), (7, "done"),
                                                                                    (8, "building"), (8, "done")]
    assert "[###############...............] 1/2 n=7: done lcaba" in bar.getvalue()  # the library's own text bar


def test_warmup_runs_every_stage_and_says_where_the_cache_is(capsys):
    """`gaussgraph warmup`: each stage (engine one by one and in lanes, dynamics one by one and in lanes) is a
    real call, named with its time; the last line says where numba keeps the cache and when to run it again."""
    from viz.cli import main

    assert main(["warmup"]) == 0
    out = capsys.readouterr().out
    for stage in ("elimination kernels, one element at a time", "elimination kernels, batches in lanes",
                  "dynamics kernel, one state at a time", "dynamics kernel, batches of states in lanes",
                  "inverse dynamics kernel"):
        assert re.search(rf"  {stage}: \d+\.\d s", out), out
    where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__"  # (the folder numba caches in, where it is set)
    assert where in out and "reinstall" in out
