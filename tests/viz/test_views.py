"""View content checked on the networkx objects and in the DOT text."""
import json
import re

import networkx as nx
import numpy as np
import pytest

from factorgraph import FactorNode
import mechanics
from mechanics import GROUND, algorithm_plan, gplc_graph, models
from viz import compare as cmp
from viz.dot import overview_dot, render, to_dot
from tests.viz import needs_dot
from viz.views import clique_tree_view, elimination_frames, factor_graph_view, link_group, mechanism_view


def _graph_and_plan(mech, algorithm):
    return algorithm_plan(mech, algorithm)


def _fills(frames):
    return [{frozenset(e) for e in f.graph.edges if f.graph.edges[e]["fill"]} for f in frames]


def test_lcaba_frames_show_the_couplings_of_000_fig4():
    graph, plan = _graph_and_plan(models.fig4(), "lcaba")
    frames = elimination_frames(graph, plan, group=link_group)
    assert [sorted(n for n in f.graph if f.graph.nodes[n]["state"] == "frontal") for f in frames][:6] == [
        ["6"], ["5"], ["4"], ["11"], ["10"], ["9"]]
    fills = [f for f in _fills(frames) if f]
    assert fills == [{frozenset("58")}, {frozenset("48")}, {frozenset("38")}, {frozenset(("10", "8"))}, {frozenset("98")}]
    first = to_dot(frames[0].graph)
    assert "5 -- 8 [color=red style=bold]" in first or "8 -- 5 [color=red style=bold]" in first
    assert "6 [label=6 fillcolor=gold style=filled]" in first


def test_proxbbo_frames_show_the_multiplier_couplings_of_000_fig5():
    graph, plan = _graph_and_plan(models.fig4(), "proxbbo")
    frames = elimination_frames(graph, plan, group=link_group)
    lam12, lam13 = ("lam", "12"), ("lam", "13")
    by_front = {tuple(sorted(map(str, (n for n in f.graph if f.graph.nodes[n]["state"] == "frontal")))): fill
                for f, fill in zip(frames, _fills(frames))}
    assert frozenset(("3", lam13)) in by_front[("9",)]  # after 11, 10, 9: constraint 13 coupled with link 3
    assert frozenset((lam12, lam13)) in by_front[("8",)]  # link 8 supports both loops
    assert frozenset(("3", lam12)) in by_front[("7",)]
    last_multipliers = next(f for f in frames if lam12 in f.graph and f.graph.nodes[lam12]["state"] == "frontal")
    assert set(last_multipliers.graph) == {"1", "2", "3", lam12, lam13}  # Fig. 5e: at link 3
    links = {l.name for l in models.fig4().links}
    assert not any(set(edge) <= links for fill in _fills(frames) for edge in fill)  # links couple only via multipliers


@pytest.mark.parametrize("model", ["fig4", "four_bar", "digit_leg"])
def test_factor_graph_view_draws_variables_and_factors_by_kind(model):
    mech = models.MODELS[model]()
    for policy, expected in (("alm", {"penalty"}), ("prox", {"loop/contact", "multiplier prior"})):
        graph = gplc_graph(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv), policy=policy)
        view = factor_graph_view(graph)
        assert nx.is_bipartite(view)
        factor_kinds = [d["kind"] for n, d in view.nodes(data=True) if isinstance(n, FactorNode)]
        assert factor_kinds.count("prior") == factor_kinds.count("tree joint") == len(mech.links)
        assert expected <= set(factor_kinds)
        variable_kinds = {d["kind"] for n, d in view.nodes(data=True) if not isinstance(n, FactorNode)}
        assert variable_kinds == ({"link", "joint"} | ({"multiplier"} if policy == "prox" else set()))
        source = to_dot(view)
        assert "shape=diamond" in source if policy == "prox" else "shape=diamond" not in source


@pytest.mark.parametrize("model", ["fig4", "digit_leg", "ladder"])
def test_mechanism_view_is_the_papers_topology_figure(model):
    mech = models.MODELS[model]()
    view = mechanism_view(mech)
    tree = [(u, v) for u, v, d in view.edges(data=True) if d["kind"] == "tree joint"]
    cuts = [(u, v) for u, v, d in view.edges(data=True) if d["kind"] == "cut joint"]
    assert sorted(tree) == sorted((l.parent, l.name) for l in mech.links)
    assert len(cuts) == len(mech.constraints)
    assert all(view.edges[e]["style"] == "dashed" for e in cuts)
    assert view.nodes[GROUND]["kind"] == "ground"
    assert 'style=dashed' in to_dot(view) and "ground [label=ground" in to_dot(view)


def test_clique_tree_view_and_overview_sheet():
    graph, plan = _graph_and_plan(models.fig4(), "lcaba")
    tree = clique_tree_view(plan)
    assert nx.is_arborescence(tree) and tree.number_of_nodes() == len(plan.steps)
    root = next(n for n in tree if tree.in_degree(n) == 0)
    assert "a 1" in tree.nodes[root]["label"] or "qdd 1" in tree.nodes[root]["label"]
    assert "eliminated +" in tree.nodes[root]["label"] and "separator" in tree.nodes[root]["label"]
    frames = elimination_frames(graph, plan, group=link_group)
    sheet = overview_dot(frames, columns=4)
    assert sheet.count("subgraph cluster_") == len(frames) == 11
    rows = re.findall(r"\{\s*graph \[rank=same\]\s*((?:\"anchor \d+\"\s*)+)\}", sheet)
    assert [re.findall(r"anchor (\d+)", row) for row in rows] == [["0", "1", "2", "3"], ["4", "5", "6", "7"], ["8", "9", "10"]]


def test_mechanism_edges_say_the_joint_kind_and_axis():
    view = mechanism_view(models.four_bar())
    labels = {view.edges[e]["label"] for e in view.edges if view.edges[e]["kind"] == "tree joint"}
    assert labels == {"revolute z"}
    cassie = mechanism_view(mechanics.load_robot("cassie"))
    kinds = {view_label.split()[0] for view_label in (cassie.edges[e].get("label", "") for e in cassie.edges) if view_label}
    assert "free" in kinds and "revolute" in kinds


def test_the_factor_graph_picture_has_a_legend_of_what_it_shows():
    from viz.gallery import with_subgraph
    from viz.views import legend_dot

    mech = models.four_bar()
    view = factor_graph_view(gplc_graph(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv),
                                        policy="prox"))
    source = with_subgraph(to_dot(view), legend_dot(view))
    legend = source[source.index("legend [shape=plaintext"):]
    for text in ("link acceleration a (ellipse)", "joint acceleration qdd", "multiplier λ (diamond)", "prior factor",
                 "tree joint factor",
                 "loop/contact factor", "multiplier prior factor"):
        assert text in legend, text
    assert "penalty factor" not in legend  # only what the picture shows


def test_render_always_writes_dot_and_says_how_to_get_graphviz(tmp_path, monkeypatch, capsys):
    source = to_dot(mechanism_view(models.four_bar()))
    monkeypatch.setattr("viz.dot.shutil.which", lambda name: None)
    import sys
    written = render(source, tmp_path / "pic", ("svg",), warn=sys.stderr)
    assert written == [tmp_path / "pic.dot"] and (tmp_path / "pic.dot").read_text() == source
    assert "apt-get install graphviz" in capsys.readouterr().err


@needs_dot
def test_render_makes_svg_when_dot_is_installed(tmp_path):
    written = render(to_dot(mechanism_view(models.four_bar())), tmp_path / "pic", ("svg",), warn=None)
    assert (tmp_path / "pic.svg") in written and "<svg" in (tmp_path / "pic.svg").read_text()


def test_comparison_table_csv_and_json(tmp_path):
    rows = cmp.compare(models.fig4(), repeat=1)
    names = [r.algorithm for r in rows]
    assert "lcaba" in names and "proxbbo" in names and "aba" not in names
    for row in rows:
        assert row.flops > 0 and row.max_front > 0 and row.seconds > 0 and row.elimination_seconds > 0
        assert row.deviation < (1e-5 if row.policy == "soft" else 1e-8)
    assert rows[names.index("lcaba")].fill_edges < rows[names.index("pv")].fill_edges
    text = cmp.format_table(rows)
    assert text.splitlines()[0].startswith("algorithm") and len(text.splitlines()) == len(rows) + 1
    cmp.write_csv(rows, tmp_path / "t.csv")
    cmp.write_json(rows, tmp_path / "t.json", mechanism="fig4")
    assert (tmp_path / "t.csv").read_text().splitlines()[0].startswith("algorithm,policy,flops")
    assert len(json.loads((tmp_path / "t.json").read_text())["rows"]) == len(rows)


def test_scaling_sweep_and_plot(tmp_path):
    points = cmp.scale("cycle", "n", [7, 9], ["lcaba", "proxbbo"], repeat=1, progress=None)
    assert [(p["size"], p["algorithm"]) for p in points] == [(7, "lcaba"), (7, "proxbbo"), (9, "lcaba"), (9, "proxbbo")]
    cmp.plot_scaling(points, tmp_path / "scale.png")
    assert (tmp_path / "scale.png").read_bytes()[:4] == b"\x89PNG"


def _positions_in(source: str) -> dict:
    return {name: pos for name, pos in re.findall(r'^\s*"?([^"\[\n]+?)"? \[.*?pos="([^"]+)"', source, flags=re.M)}


def test_every_frame_of_every_algorithm_draws_each_node_at_the_same_place():
    """One layout per mechanism (viz.layout): the DOT of every frame of every algorithm pins each node at one
    position, the eliminated ones included."""
    from viz.layout import mechanism_positions

    mech = models.fig4()
    positions = mechanism_positions(mech, link_group)
    seen, frames_drawn = {}, 0
    for algorithm in ("pv", "proxbbo", "lcaba", "proxltl", "min_fill"):
        graph, plan = algorithm_plan(mech, algorithm)
        for frame in elimination_frames(graph, plan, group=link_group, keep_eliminated=True):
            drawn = _positions_in(to_dot(frame.graph, "f", positions))
            assert len(drawn) == frame.graph.number_of_nodes() and len(drawn) >= 11
            for node, pos in drawn.items():
                assert seen.setdefault(node, pos) == pos, (algorithm, frame.title, node)
            frames_drawn += 1
    assert frames_drawn > 50 and len(seen) == 13  # 11 links and the two loops' multipliers


def test_frames_in_place_keep_the_eliminated_faded_and_label_the_fill_with_its_step():
    graph, plan = algorithm_plan(models.fig4(), "lcaba")
    frames = elimination_frames(graph, plan, group=link_group, keep_eliminated=True)
    gone = set()
    for frame in frames:
        states = nx.get_node_attributes(frame.graph, "state")
        assert {n for n, s in states.items() if s == "eliminated"} == gone
        frontal = {link_group(k) for s in frame.steps for k in s.frontal}
        assert {n for n, s in states.items() if s == "frontal"} == frontal
        separator = {link_group(k) for s in frame.steps for k in s.separator} - frontal - gone
        assert {n for n, s in states.items() if s == "separator"} == separator
        gone |= frontal
    # 000 Sec. IV-B: eliminating link 6 (step 0) couples 5 and 8; the red edge keeps saying so later
    last = frames[-1].graph
    assert last.edges["5", "8"]["fill_step"] == 0 and frames[0].graph.edges["5", "8"]["fill"]
    assert not frames[1].graph.edges["5", "8"]["fill"] and frames[1].graph.edges["5", "8"]["label"] == "0"


@needs_dot
def test_a_frame_at_fixed_positions_renders_without_a_layout(tmp_path):
    from viz.layout import fixed_positions, mechanism_nodes

    mech = models.four_bar()
    graph, plan = algorithm_plan(mech, "proxbbo")
    frame = elimination_frames(graph, plan, group=link_group, keep_eliminated=True)[1]
    source = to_dot(frame.graph, "f", fixed_positions(mechanism_nodes(mech, link_group)))
    written = render(source, tmp_path / "f", ("svg",), warn=None, fixed=True)
    assert (tmp_path / "f.svg") in written and "<svg" in (tmp_path / "f.svg").read_text()


def test_cassies_overview_sheets_fit_4000_pixels():
    """Every algorithm's overview of Cassie (31 nodes a frame, up to 27 frames) stays within 4,000 px (3,000 pt):
    the grid takes as many columns as fit."""
    from viz.layout import mechanism_positions

    cassie = mechanics.load_robot("cassie")
    positions = mechanism_positions(cassie, link_group)
    for algorithm in ("lcaba", "proxbbo", "proxltl"):
        graph, plan = algorithm_plan(cassie, algorithm)
        frames = elimination_frames(graph, plan, group=link_group, keep_eliminated=True)
        xs = [float(p.split(",")[0]) for p in _positions_in(overview_dot(frames, columns=None, positions=positions)).values()]
        assert max(xs) - min(xs) < 3000 - 2 * 90, algorithm  # the nodes' span inside the sheet's margins
