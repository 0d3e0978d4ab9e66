"""Cross-check with GTSAM on linear Gaussian graphs with hard (constrained) rows."""
import gtsam
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import elimination
from factorgraph import FactorGraph, LeastSquares, LinearEquality, Variable


@st.composite
def jacobian_graphs(draw):
    n = draw(st.integers(1, 6))
    dims = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    free = list(dims)
    factors = []  # (keys, rows, hard)
    for _ in range(draw(st.integers(0, 8))):
        keys = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(3, n), unique=True))
        rows = draw(st.integers(1, 4))
        hard = draw(st.booleans()) and rows <= sum(free[k] for k in keys)
        if hard:  # match each hard row to its own free scalar column: independent rows
            left = rows
            for k in keys:
                taken = min(left, free[k])
                free[k] -= taken
                left -= taken
        factors.append((tuple(keys), rows, hard))
    return dims, factors, draw(st.integers(0, 2**31 - 1))


def _build(dims, factors, seed):
    rng = np.random.default_rng(seed)
    ours, theirs = FactorGraph(), gtsam.GaussianFactorGraph()
    for k, d in enumerate(dims):
        ours.add_variable(Variable(k, d))
    specs = [((k,), d, False) for k, d in enumerate(dims)] + list(factors)  # a prior on every variable
    for index, (keys, rows, hard) in enumerate(specs):
        if index < len(dims):  # the priors: singular values in [0.5, 2], so every graph drawn is one GTSAM accepts
            Q = np.linalg.qr(rng.normal(size=(rows, rows)))[0]
            blocks = [Q * rng.uniform(0.5, 2.0, rows)]
        else:
            blocks = [rng.normal(size=(rows, dims[k])) + (np.eye(rows, dims[k]) * 2 if len(keys) == 1 else 0) for k in keys]
        b = rng.normal(size=rows)
        if hard:
            ours.add(LinearEquality(list(keys), blocks, b))
            model = gtsam.noiseModel.Constrained.All(rows)
        else:
            sigmas = rng.uniform(0.5, 2.0, rows)
            ours.add(LeastSquares(list(keys), blocks, b, weight=np.diag(sigmas**-2)))
            model = gtsam.noiseModel.Diagonal.Sigmas(sigmas)
        args = [a for k, block in zip(keys, blocks) for a in (k, block)]
        theirs.add(gtsam.JacobianFactor(*args, b, model))
    return ours, theirs


@settings(max_examples=60)
@given(jacobian_graphs())
def test_solution_equals_gtsam(case):
    ours, theirs = _build(*case)
    expected = theirs.optimize()
    scale = 1.0 + max(np.max(np.abs(expected.at(k))) for k in ours.keys)
    for name in elimination.ORDERINGS:
        solution = elimination.solve(ours, name)
        for k in ours.keys:
            assert np.max(np.abs(solution[k] - expected.at(k))) < 1e-8 * scale


def test_least_squares_hessian_equals_gtsams_information():
    rng = np.random.default_rng(3)
    A0, A1, b, sigmas = rng.normal(size=(3, 2)), rng.normal(size=(3, 1)), rng.normal(size=3), np.array([0.5, 1, 2])
    ours = LeastSquares([0, 1], [A0, A1], b, weight=np.diag(sigmas**-2))
    theirs = gtsam.HessianFactor(gtsam.JacobianFactor(0, A0, 1, A1, b, gtsam.noiseModel.Diagonal.Sigmas(sigmas)))
    assert np.allclose(ours.H, theirs.information())
    assert np.allclose(ours.g, theirs.linearTerm().ravel())
