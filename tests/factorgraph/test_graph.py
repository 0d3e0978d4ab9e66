"""The graph container, its networkx views and the dense reference."""
import networkx as nx
import numpy as np
import pytest
import scipy.linalg
from hypothesis import assume, given

from factorgraph import FactorGraph, FactorNode, GraphStructure, LinearEquality, Quadratic, Variable
from tests.random_graphs import build_graph, graph_specs, max_relative_error


def _small():
    g = FactorGraph()
    g.add_variable(Variable("a", 2))
    g.add_variable(Variable("b", 1))
    g.add_variable(Variable("lam", 1, "max"))
    g.add(Quadratic(["a", "b"], np.eye(3)))
    g.add(LinearEquality(["b"], [[[1.0]]], [0.0]))
    g.add(Quadratic(["lam", "a"], np.zeros((3, 3))))
    return g


def test_interaction_graph_and_bipartite_factor_graph():
    g = _small()
    ig = g.interaction_graph()
    assert set(map(frozenset, ig.edges)) == {frozenset("ab"), frozenset(("lam", "a"))}
    assert ig.nodes["lam"]["role"] == "max" and ig.nodes["a"]["dim"] == 2
    fg = g.factor_graph()
    assert nx.is_bipartite(fg)
    assert fg.nodes[FactorNode(1)]["kind"] == "LinearEquality"
    assert set(fg.adj[FactorNode(0)]) == {"a", "b"}
    assert g.factors_of("a") == [0, 2]


def test_structure_equality_ignores_numbers():
    assert _small().structure() == _small().structure()
    assert GraphStructure.from_networkx(nx.path_graph(2)).interaction_graph().has_edge(0, 1)


@pytest.mark.parametrize(
    "act, message",
    [
        (lambda g: g.add(Quadratic(["a", "zz"], np.eye(3))), "unknown variable.*zz"),
        (lambda g: g.add(Quadratic(["a"], np.eye(3))), "dimensions \\(2,\\)"),
        (lambda g: g.add(LinearEquality(["a"], [np.eye(3)], np.zeros(3))), "3 columns.*dimension 2"),
        (lambda g: g.add_variable(Variable("a", 2)), "already in the graph"),
        (lambda g: g.add("not a factor"), "Quadratic, LeastSquares or LinearEquality"),
        (lambda g: g.add(Quadratic(["b"], np.ones((3, 1, 1)))) and g.add(Quadratic(["b"], np.ones((4, 1, 1)))), "batch shape"),
    ],
)
def test_bad_graph_input_is_refused(act, message):
    with pytest.raises((ValueError, TypeError), match=message):
        act(_small())


def test_lookup_errors_name_the_key():
    with pytest.raises(KeyError, match="'nope'"):
        _small().variable("nope")
    with pytest.raises(KeyError, match="no factor with index 9"):
        _small().factor(9)


def test_dense_solve_by_hand():
    """min 1/2(x^2 + y^2) - x - 3y  s.t.  x + y = 2  has x = 0, y = 2 (multiplier 1)."""
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add_variable(Variable("y", 1))
    g.add(Quadratic(["x", "y"], np.eye(2), [1.0, 3.0]))
    i = g.add(LinearEquality(["x", "y"], [[[1.0]], [[1.0]]], [2.0]))
    values, nu = g.dense_solve(multipliers=True)
    assert np.allclose(values["x"], 0.0) and np.allclose(values["y"], 2.0) and np.allclose(nu[i], 1.0)


@given(graph_specs(multipliers=False))
def test_dense_solve_equals_an_independent_null_space_solve(spec):
    """Primal graphs: x = x_p + Z y with Z spanning null(A), then (Z'HZ) y = Z'(g - H x_p)."""
    graph = build_graph(spec)
    system = graph.to_dense()
    n = system.n
    H, A, g, b = system.K[:n, :n], system.K[n:, :n], system.rhs[:n], system.rhs[n:]
    if A.shape[0]:
        x_p = np.linalg.lstsq(A, b, rcond=None)[0]
        Z = scipy.linalg.null_space(A)
    else:
        x_p, Z = np.zeros(n), np.eye(n)
    reduced = Z.T @ H @ Z
    assume(A.shape[0] == 0 or np.linalg.cond(A) < 1e8)
    # (the solve under test is one dense KKT solve: its round-off follows cond(K), which these two do not bound --
    # a case of cond(A) 3e4 with cond(K) 1.9e9 differed by 1.7e-8)
    assume(np.linalg.cond(system.K) < 1e7)
    if Z.shape[1]:
        assume(np.linalg.cond(reduced) < 1e8)
        x = x_p + Z @ np.linalg.solve(reduced, Z.T @ (g - H @ x_p))
    else:
        x = x_p
    reference = {k: x[s] for k, s in system.index.items()}
    assert max_relative_error(graph.dense_solve(), reference) < 1e-8
