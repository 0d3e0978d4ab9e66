"""Simulating closed loops: how far they drift apart, and two ways to keep them closed.

Forward dynamics asks for zero relative acceleration across each loop; integrated step by step
(semi-implicit Euler on the configuration manifold: ``v += h qdd``, ``q = q (+) h v``), round-off and the
integrator's error open the loops slowly.  Three runs from the same closed, moving state:

* uncorrected;
* Baumgarte's correction (``forward_dynamics(..., baumgarte=(Kp, Kd))``): each loop asks for the
  acceleration ``-Kp e - Kd e_dot`` that pulls its position and velocity errors back (critically damped
  at ``Kd = 2 sqrt(Kp)``);
* projection after each step: ``Mechanism.project`` closes the loops (Levenberg-Marquardt on the
  errors) and ``Mechanism.project_velocity`` removes the velocity across them.

The gap is the largest position error of any loop (``Mechanism.constraint_error``: metres at the loops'
points).  The corrected accelerations are checked against the dense KKT solve of the same graph (the
test suite checks them against Pinocchio's ``constraintDynamics`` with the same gains).

fig4's two loops keep two dependent rows wherever they close, and its motion passes near configurations
where the accelerations grow without bound; there a fixed 1 ms step cannot follow, and which run meets one
first depends on round-off (from some starts, moving the start by 1e-12 changes it).  A run that gets
there stops and says so (its gaps up to then are kept) instead of stepping into NaN.  From this start all
three runs stay clear for 1 s; over 2 s the projected one meets such a configuration at 1.69 s (and from
seeds 6, 8, 9 at 1.06-1.52 s) -- the motion's, not an algorithm's or the step's: LCABA, proxLTL and the
embedded loops stop within 0.1 s of proxBBO, and steps halved down to 1 ms / 4096 where a step cannot follow
stop at the same 1.694 s (accelerations of 5e12, velocities of 6e4 there).

    python examples/simulate_loops.py [--seconds 1] [--plot gaps.png]
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

import mechanics

STEP = 1e-3
ALGORITHM = "proxbbo"
START = 4  # the seed of fig4's start: a closed, moving state whose motion stays calm (under 10 rad/s for 2 s uncorrected)
FOLLOW = 0.1  # a step that turns a joint by more than this (rad, or m) cannot follow the motion: the run stops
GAINS = (100.0, 20.0)  # Kp = omega^2, Kd = 2 omega at omega = 10 rad/s: critically damped, ten times slower than h


def gap(mech, q) -> float:
    return max(float(np.max(np.abs(e))) for e in mech.constraint_error(q).values())


def simulate(mech, q, v, seconds: float, correction: str) -> tuple:
    """``(gaps, unconverged)``: the gap after each step of ``seconds`` of motion under gravity and the steps
    whose dynamics did not converge, ``correction`` one of ``"none"``, ``"baumgarte"``, ``"projection"``; a
    run whose step cannot follow the motion (a joint turned by more than ``FOLLOW`` in one step) stops there
    and says so."""
    dynamics = mechanics.prepare(mech, ALGORITHM, baumgarte=GAINS if correction == "baumgarte" else None)
    tau, gaps = np.zeros(mech.nv), []
    with warnings.catch_warnings(record=True) as caught:  # (counted: a drifting loop's rows stop being consistent)
        warnings.simplefilter("always", mechanics.ConvergenceWarning)
        for step in range(round(seconds / STEP)):
            qdd = dynamics(q, v, tau).qdd
            v = v + STEP * qdd
            if not np.all(np.isfinite(v)) or STEP * np.max(np.abs(v)) > FOLLOW:
                print(f"  {correction}: stopped at t = {step * STEP:.3f} s: accelerations of "
                      f"{np.max(np.abs(qdd)):.1e} (near a singular configuration of the loops); a {STEP * 1e3:g} ms "
                      f"step cannot follow")
                break
            q = mech.integrate(q, STEP * v)
            if correction == "projection":
                try:
                    q = mech.project(q)
                except ValueError as error:  # (a step through a singular configuration can leave no closure near)
                    print(f"  projection stopped at t = {step * STEP:.3f} s: {error}")
                    break
                v = mech.project_velocity(q, v)
            gaps.append(gap(mech, q))
    unconverged = sum(issubclass(w.category, mechanics.ConvergenceWarning) for w in caught)
    return np.array(gaps), unconverged


def moving_closed_state(mech, rng, start=None):
    """A closed configuration near ``start`` (default: a random one) and a velocity along the loops."""
    start = mech.random_configuration(rng) if start is None else start
    q = mech.project(start)
    return q, mech.project_velocity(q, rng.normal(size=mech.nv))


def mechanisms(rng) -> dict:
    """``{name: (mechanism, a state to start from)}``: fig4 from a random closed configuration, Cassie from
    its file's pose moved by 0.1 rad at each joint.

    fig4's two loops keep two dependent rows wherever they close (rank 4 of 6), so its dynamics converge
    slowly near closed states (the steps "not converged": a singular configuration) and its motion passes
    near configurations where the accelerations grow without bound and a 1 ms step cannot follow, from
    many starts."""
    fig4 = mechanics.models.fig4()
    out = {"fig4": (fig4, moving_closed_state(fig4, rng))}
    try:
        sdf = mechanics.pinocchio_io.example_robot_data_dir() / "cassie_description/robots/cassie_v2.sdf"
        cassie = mechanics.load_sdf(sdf)
    except (ImportError, FileNotFoundError) as missing:  # (example-robot-data: the `robots` extra)
        print(f"cassie left out: {missing}")
        return out
    moved = np.concatenate([np.zeros(6), rng.uniform(-0.1, 0.1, cassie.nv - 6)])
    out["cassie"] = (cassie, moving_closed_state(cassie, rng, cassie.integrate(cassie.neutral_configuration(), moved)))
    return out


def against_the_dense_solve(mech, q, v) -> str:
    """One state's corrected accelerations beside the dense KKT solve of the same graph (``hard`` rows)."""
    tau = np.zeros(mech.nv)
    ours = mechanics.forward_dynamics(mech, q, v, tau, "lcaba", baumgarte=GAINS).qdd
    x = mechanics.gplc_graph(mech, q, v, tau, policy="hard", baumgarte=GAINS).dense_solve()
    reference = np.concatenate([x[mechanics.JointAcceleration(link.name)] for link in mech.links if link.joint.nv])
    return f"the dense KKT solve's, max difference {np.max(np.abs(ours - reference)) / max(1.0, np.max(np.abs(reference))):.1e}"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--plot", help="write the gaps over time to this image (needs matplotlib)")
    args = parser.parse_args(argv)
    rng, runs = np.random.default_rng(START), {}
    for name, (mech, (q, v)) in mechanisms(rng).items():
        results = {how: simulate(mech, q, v, args.seconds, how) for how in ("none", "baumgarte", "projection")}
        runs[name] = {how: gaps for how, (gaps, _) in results.items()}
        print(f"{mech}: {args.seconds:g} s in steps of {STEP * 1e3:g} ms ({ALGORITHM}), largest loop gap: "
              + ", ".join(f"{how} {np.max(gaps, initial=0.0):.1e} ({bad} steps not converged)" for how, (gaps, bad) in results.items()))
        opened = mech.integrate(q, 0.01 * rng.normal(size=mech.nv))  # (an open state: both gains act)
        print(f"  Baumgarte's accelerations where the loops are open by {gap(mech, opened):.1e} (relative to the "
              f"largest), beside {against_the_dense_solve(mech, opened, v)}")
    if args.plot:
        _plot(runs, args.plot)
    return runs


def _plot(runs: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.5), squeeze=False)
    for ax, (name, gaps) in zip(axes[0], runs.items()):
        for how, values in gaps.items():
            ax.semilogy(STEP * np.arange(1, len(values) + 1), np.maximum(values, 1e-17), label=how)
        ax.set(title=name, xlabel="time (s)", ylabel="largest loop gap (m)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
