"""Pictures of robots held by contacts (issue 38): point and weld contacts, whose constraint names
(``FRAME:weld``) hold a colon, drawn by Graphviz under every algorithm that applies."""
import re

from tests.viz import needs_dot
from viz.cli import load_mechanism, main
from viz.compare import applicable
from viz.gallery import render_gallery
from viz.views import elimination_frames, link_group


def _svg(path) -> str:
    text = path.read_text()
    assert "<svg" in text[:2000], path
    return text


@needs_dot
def test_solo12_on_a_point_and_a_weld_contact_draws_under_every_algorithm(tmp_path):
    from mechanics import algorithm_plan

    solo = load_mechanism("solo12", contacts=["FL_FOOT", "HR_FOOT:weld"])
    algorithms = [name for name, _ in applicable(solo)]
    assert {"pv", "proxbbo", "lcaba", "proxltl"} <= set(algorithms)
    drawn = set()
    for algorithm in algorithms:
        render_gallery(solo, algorithm, tmp_path, formats=("svg",), drawn=drawn)
        graph, plan = algorithm_plan(solo, algorithm)
        frames = elimination_frames(graph, plan, group=link_group, keep_eliminated=True)
        steps = sorted((tmp_path / algorithm).glob("step_*.svg"))
        assert len(steps) == len(frames), algorithm
        for path in [*steps, tmp_path / algorithm / "overview.svg", tmp_path / algorithm / "clique_tree.svg"]:
            _svg(path)
    mechanism = _svg(tmp_path / "mechanism.svg")
    assert "contact FL_FOOT:point" in mechanism and "contact HR_FOOT:weld" in mechanism
    multipliers = [p for p in (tmp_path / "proxbbo").glob("step_*.svg") if "λ HR_FOOT:weld" in p.read_text()]
    assert multipliers  # the weld's multiplier is drawn, by its name


@needs_dot
def test_the_render_command_of_the_issue_draws_talos_on_two_welded_soles(tmp_path, capsys):
    """``gaussgraph render talos --contact left_sole_link:weld --contact right_sole_link:weld``, in-process:
    it ended in Graphviz's "node Multiplier('left_sole_link ... has no position" before."""
    status = main(["render", "talos", "--contact", "left_sole_link:weld", "--contact", "right_sole_link:weld",
                   "--algorithm", "proxbbo", "--out", str(tmp_path)])
    assert status == 0, capsys.readouterr().err
    steps = sorted((tmp_path / "proxbbo").glob("step_*.svg"))
    assert steps and (tmp_path / "proxbbo" / "overview.svg").exists()
    titles = [re.search(r"<text[^>]*>(step \d+: [^<]*)</text>", _svg(path)).group(1) for path in steps]
    assert [int(title.split(":")[0].split()[1]) for title in titles] == list(range(1, len(steps) + 1))
    multipliers = r"step \d+: eliminate the multipliers? of constraints? .*left_sole_link:weld"
    assert any(re.match(multipliers, title) for title in titles)
