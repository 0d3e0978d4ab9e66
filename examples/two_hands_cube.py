"""Two Allegro hands holding one cube with every contact stated twice: redundant constraints.

The proximal and augmented-Lagrangian algorithms converge (to the
least-squares forces), printed beside ``pinocchio.constraintDynamics``'s
answer; the hard policy (PV) refuses with a pointer to ``prox``.
Needs the ``robots`` extra.

    python examples/two_hands_cube.py
"""
from __future__ import annotations

import numpy as np

import elimination
import mechanics
from mechanics.pinocchio_io import allegro_grasp, pinocchio


def main(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    model, constraints, q = allegro_grasp(2, rng)
    constraints = list(constraints) * 2  # every fingertip contact twice
    v, tau = 0.1 * rng.normal(size=model.nv), rng.normal(size=model.nv)
    mech = mechanics.from_pinocchio(model, constraints)
    print(f"{mech}: {mech.constraint_dim} constraint rows, {mech.nv} degrees of freedom")
    ddq = pinocchio_answer(model, constraints, q, v, tau)
    results = {}
    for name in ("proxbbo", "proxltl", "lcaba"):
        results[name] = result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, max_iter=200)
        verb = "converged in" if result.converged else "did not converge in"
        print(f"{name:8s} {verb} {result.iterations} iterations, constraint residual {result.residual:.1e}, "
              f"|qdd - pinocchio| {np.max(np.abs(result.qdd - ddq)):.1e}")
    try:
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv")
        refused = None
    except elimination.SingularProblemError as error:
        refused = str(error)
        print("pv refused:", refused.split(". ")[0])
    return {"mechanism": mech, "results": results, "refused": refused, "model": model, "constraints": constraints,
            "q": q, "v": v, "tau": tau, "pinocchio": ddq}


def pinocchio_answer(model, constraints: list, q, v, tau) -> np.ndarray:
    """The reference: ``pinocchio.constraintDynamics``, whose proximal solver takes redundant contacts."""
    pin = pinocchio()
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for cm in constraints:
        models.append(cm)
        datas.append(cm.createData())
    data = model.createData()
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-12, 1e-6, 50)  # accuracy, proximal mu, iterations
    return np.array(pin.constraintDynamics(model, data, q, v, tau, models, datas, settings))


if __name__ == "__main__":
    main()
