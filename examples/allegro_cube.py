"""An Allegro hand holding a free cube with its four fingertips (000 Table II, case 1).

The scene is built in Pinocchio (``mechanics.pinocchio_io.allegro_grasp``);
the mechanism comes from ``mechanics.from_pinocchio``, so states and forces
read as Pinocchio's.  Compares LCABA and proxBBO with
``pinocchio.constraintDynamics`` (mu_pin = 1 / mu).  Needs the ``robots`` extra.

    python examples/allegro_cube.py
"""
from __future__ import annotations

import numpy as np

import mechanics
from mechanics.pinocchio_io import allegro_grasp, pinocchio


def main(hands: int = 1, seed: int = 0) -> dict:
    pin = pinocchio()
    rng = np.random.default_rng(seed)
    model, constraints, q = allegro_grasp(hands, rng)
    v, tau = 0.1 * rng.normal(size=model.nv), rng.normal(size=model.nv)
    mech = mechanics.from_pinocchio(model, constraints)
    print(f"{mech}")
    results = {a: mechanics.forward_dynamics(mech, q, v, tau, algorithm=a, mu=1e6) for a in ("lcaba", "proxbbo", "pv")}
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for cm in constraints:
        models.append(cm)
        datas.append(cm.createData())
    data = model.createData()
    pin.initConstraintDynamics(model, data, models, datas)
    ddq = pin.constraintDynamics(model, data, q, v, tau, models, datas, pin.ProximalSettings(1e-12, 1e-6, 50))
    for name, result in results.items():
        print(f"{name:8s} iterations {result.iterations}, residual {result.residual:.1e}, "
              f"|qdd - pinocchio| {np.max(np.abs(result.qdd - ddq)):.1e}")
    return {"mechanism": mech, "results": results, "pinocchio": np.array(ddq), "q": q, "v": v, "tau": tau,
            "model": model, "constraints": constraints}


if __name__ == "__main__":
    main()
