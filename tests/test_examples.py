"""Every example runs as a script, and its numbers match an independent reference."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import gtsam
import numpy as np
import pytest
import scipy.linalg

import elimination
import mechanics
from tests.mechanics.pinocchio_oracle import dense_reference

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCES = {  # what each example prints its answer beside
    "allegro_cube.py": r"\|qdd - pinocchio\| \d",
    "digit_legs.py": r"deviation: .*against the dense KKT solve",
    "four_bar.py": r"the dense KKT solve's \[.*\], max difference",
    "geared_robots.py": r"inverse dynamics of the answer against tau \+ J' f: max difference",
    "kalman_smoother.py": r"dense solve's final state \[.*\], max difference",
    "lqr.py": r"solve_discrete_are's gain \[.*\], max difference",
    "pose_graph.py": r"the posterior covariance says \d",
    "range_localization.py": r"scipy's least_squares on each run, max difference",
    "simulate_loops.py": r"beside the dense KKT solve's, max difference",
    "two_hands_cube.py": r"\|qdd - pinocchio\| \d",
}


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_as_a_script_and_prints_its_reference(script, tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert script in REFERENCES, f"{script}: say which reference it prints (REFERENCES)"
    assert re.search(REFERENCES[script], result.stdout), result.stdout
    differences = [float(d) for d in re.findall(r"max difference (?:over [\w, ]+ )?([-+.\de]+)", result.stdout)]
    assert all(d < 1e-8 for d in differences), result.stdout


def rts_smoother(p):
    """Kalman filter + Rauch-Tung-Striebel backward pass, written out independently."""
    A, C, Q, R = p["A"], p["C"], p["Q"], p["R"]
    means, covs, predicted = [], [], []
    m, P = p["m0"], p["P0"]
    for k, y in enumerate(p["ys"]):
        if k:
            m, P = A @ m, A @ P @ A.T + Q
        predicted.append((m, P))
        S = C @ P @ C.T + R
        gain = P @ C.T @ np.linalg.inv(S)
        m, P = m + gain @ (y - C @ m), P - gain @ S @ gain.T
        means.append(m)
        covs.append(P)
    smoothed = [means[-1]]
    for k in reversed(range(len(means) - 1)):
        m_pred, P_pred = predicted[k + 1]
        G = covs[k] @ A.T @ np.linalg.inv(P_pred)
        smoothed.insert(0, means[k] + G @ (smoothed[0] - m_pred))
    return np.array(smoothed)


def test_kalman_smoother_equals_rts():
    out = load("kalman_smoother").main(steps=40)
    assert np.allclose(out["smoothed"], rts_smoother(out["problem"]), rtol=1e-9, atol=1e-10)
    assert len(out["plan"].fill_edges) == 0


def test_pose_graph_equals_gtsam():
    module = load("pose_graph")
    out = module.main()
    theirs = gtsam.GaussianFactorGraph()
    for factor in out["graph"].factors:
        W = factor.weight if np.ndim(factor.weight) == 2 else float(factor.weight) * np.eye(len(factor.b))
        model = gtsam.noiseModel.Gaussian.Information(W)
        args = [a for key, block in zip(factor.keys, factor.A) for a in (key, block)]
        theirs.add(gtsam.JacobianFactor(*args, factor.b, model))
    expected = theirs.optimize()
    for k, pose in enumerate(out["estimate"]):
        assert np.allclose(pose, expected.at(k), atol=1e-9)


def test_the_pose_graph_loop_closure_leaves_the_error_the_posterior_covariance_predicts():
    """Over 2000 noise draws (fixed seeds): dead reckoning's mean squared position error is its
    random-walk variance, 2 sigma^2 mean(k); the loop closure's is the trace of the posterior
    covariance of the positions, from the information matrix written out here per axis (anchor, an
    odometry chain, one closure between the ends); and it is about a third lower."""
    module = load("pose_graph")
    stats = module.over_draws(2000)
    n = len(module.measurements()["truth"])
    sigma, sigma_loop = module.SIGMA_ODOMETRY[0], module.SIGMA_LOOP[0]
    assert module.SIGMA_ODOMETRY[1] == sigma and module.SIGMA_LOOP[1] == sigma_loop
    H = np.zeros((n, n))
    H[0, 0] += 1e6
    for k in range(n - 1):
        H[k : k + 2, k : k + 2] += np.array([[1.0, -1.0], [-1.0, 1.0]]) / sigma**2
    H[np.ix_([0, n - 1], [0, n - 1])] += np.array([[1.0, -1.0], [-1.0, 1.0]]) / sigma_loop**2
    predicted = 2 * np.trace(np.linalg.inv(H)) / n  # x and y alike
    assert abs(stats["mse_dead_reckoning"] / (2 * sigma**2 * np.mean(np.arange(n))) - 1) < 0.05
    assert abs(stats["mse_loop"] / predicted - 1) < 0.05
    assert stats["mse_loop"] < 0.5 * stats["mse_dead_reckoning"] and stats["fraction_better"] > 0.7
    assert abs(module.posterior_position_mse(module.measurements()) / predicted - 1) < 1e-9


def riccati_gain(T):
    """K_0 of the T-step LQR by the textbook backward Riccati recursion."""
    lqr = load("lqr")
    P = lqr.Q
    for _ in range(T):
        K = np.linalg.solve(lqr.R + lqr.B.T @ P @ lqr.B, lqr.B.T @ P @ lqr.A)
        P = lqr.Q + lqr.A.T @ P @ (lqr.A - lqr.B @ K)
    return K


def test_lqr_gains_are_riccatis_and_tend_to_the_dare_solution():
    lqr = load("lqr")
    for T in (1, 5, 30):
        assert np.allclose(lqr.gains(T), riccati_gain(T), rtol=1e-9)
    P = scipy.linalg.solve_discrete_are(lqr.A, lqr.B, lqr.Q, lqr.R)
    K_inf = np.linalg.solve(lqr.R + lqr.B.T @ P @ lqr.B, lqr.B.T @ P @ lqr.A)
    assert np.allclose(lqr.main(T=200)["K"], K_inf, rtol=1e-8)


def test_periodic_lqr_and_scenario_tree_equal_the_dense_solve():
    lqr = load("lqr")
    out = lqr.main(T=50)
    for graph, ordering in ((out["periodic"], "min_fill"), (out["tree"], "min_degree")):
        ours, dense = elimination.solve(graph, ordering), graph.dense_solve()
        assert max(np.max(np.abs(ours[k] - dense[k])) for k in dense) < 1e-9
    x0, xT = elimination.solve(out["periodic"])[("x", 0)], elimination.solve(out["periodic"])[("x", 40)]
    assert np.allclose(x0, xT) and np.abs(x0).max() > 1e-3  # periodic and not trivial


def test_four_bar_simulation_stays_on_the_dense_solution():
    out = load("four_bar").main()
    mech, q, v, tau = out["mechanism"], out["q"], out["v"], out["tau"]
    x = mechanics.gplc_graph(mech, q, v, tau, policy="hard").dense_solve()
    reference = np.concatenate([x[("qdd", l.name)] for l in mech.links])
    for qdd in out["accelerations"].values():
        assert np.allclose(qdd, reference, rtol=1e-8, atol=1e-8)
    assert out["residuals"].max() < 1e-8


def test_digit_leg_table_agrees_with_the_dense_solve():
    out = load("digit_legs").main()
    rows = out["rows"]
    assert {r.algorithm for r in rows} >= {"pv", "proxbbo", "lcaba", "proxltl"}
    assert all(r.deviation < (1e-5 if r.policy == "soft" else 1e-8) for r in rows)
    assert set(out["embedded_deviation"]) == {"proxbbo", "embed/clusters"}
    assert all(d < 1e-9 for d in out["embedded_deviation"].values()), out["embedded_deviation"]


def test_allegro_cube_equals_pinocchio():
    out = load("allegro_cube").main()
    ddq, _ = dense_reference(out["model"], out["constraints"], out["q"], out["v"], out["tau"])
    for result in out["results"].values():
        assert np.max(np.abs(result.qdd - ddq)) < 1e-8 * max(1, np.abs(ddq).max())
    assert np.max(np.abs(out["pinocchio"] - ddq)) < 1e-6 * max(1, np.abs(ddq).max())


def test_two_hands_cube_redundancy():
    out = load("two_hands_cube").main()
    ddq, _ = dense_reference(out["model"], out["constraints"], out["q"], out["v"], out["tau"])
    for result in out["results"].values():
        assert np.max(np.abs(result.qdd - ddq)) < 1e-8 * max(1, np.abs(ddq).max())
    assert out["refused"] is not None and "prox" in out["refused"]


def test_range_localization_is_gauss_newton_on_one_plan():
    """Each Gauss-Newton iteration factorizes the batch once, on one plan; the answer is a stationary point
    of the whole cost (its gradient, by central differences of the summed squares, vanishes) and beats dead
    reckoning on every run."""
    module = load("range_localization")
    out = module.main(steps=12, runs=3)
    driven, p = out["driven"], out["problem"]
    assert driven.converged.all() and driven.factorizations == int(driven.iterations.max()) > 2

    def cost(path: np.ndarray, run: int) -> float:
        prior = (path[0] - p["start"][run]) / module.SIGMA_PRIOR
        odometry = (np.diff(path, axis=0) - p["u"][run]) / module.SIGMA_ODOMETRY
        ranges = (np.linalg.norm(path[:, None] - module.BEACONS, axis=-1) - p["ranges"][run]) / module.SIGMA_RANGE
        return 0.5 * (np.sum(prior**2) + np.sum(odometry**2) + np.sum(ranges**2))

    for run in range(3):
        path, h = out["path"][run], 1e-6
        gradient = np.zeros(path.shape)
        for index in np.ndindex(*path.shape):
            step = np.zeros(path.shape)
            step[index] = h
            gradient[index] = (cost(path + step, run) - cost(path - step, run)) / (2 * h)
        assert np.max(np.abs(gradient)) < 1e-3 * cost(path, run)
        dead = module.dead_reckoning(p)[run]
        assert np.max(np.abs(path - p["path"])) < np.max(np.abs(dead - p["path"]))


def test_simulate_loops_keeps_the_four_bar_closed_as_it_says():
    """Baumgarte's correction keeps the loop closer than no correction; projection closes it every step."""
    example, mech = load("simulate_loops"), mechanics.models.four_bar()
    rng = np.random.default_rng(3)
    q, v = example.moving_closed_state(mech, rng)
    gaps = {how: example.simulate(mech, q, v, 0.3, how)[0] for how in ("none", "baumgarte", "projection")}
    assert gaps["none"].max() > 1e-5 and gaps["baumgarte"].max() < gaps["none"].max() / 2
    assert gaps["projection"].max() <= 1e-10


def test_simulate_loops_stops_a_run_its_step_cannot_follow_and_says_so(capsys, monkeypatch):
    """A run whose step turns a joint by more than ``FOLLOW`` stops there with a line saying when and why,
    keeping the gaps up to then, instead of stepping on into NaN (here ``FOLLOW`` set below any step)."""
    example, mech = load("simulate_loops"), mechanics.models.four_bar()
    q, v = example.moving_closed_state(mech, np.random.default_rng(3))
    monkeypatch.setattr(example, "FOLLOW", 1e-9)
    gaps, _ = example.simulate(mech, q, v, 0.01, "none")
    assert gaps.size == 0
    assert re.search(r"none: stopped at t = 0\.000 s: accelerations of [-+.\de]+ .*1 ms step cannot follow",
                     capsys.readouterr().out)
    monkeypatch.setattr(example, "FOLLOW", np.inf)
    assert example.simulate(mech, q, v, 0.01, "none")[0].size == 10 and not capsys.readouterr().out

