"""Constrained dynamics of mechanisms as Gaussian factor graphs (GPLC).

The mechanism is a description (:class:`Mechanism`); :func:`gplc_graph` turns a
state into a factor graph; :func:`forward_dynamics` eliminates it under one of
the papers' algorithms -- each a (constraint policy, ordering policy) pair in
:data:`ALGORITHMS`.  Depends on ``factorgraph`` and ``elimination``.

>>> import numpy as np, mechanics
>>> mech = mechanics.models.fig4()
>>> res = mechanics.forward_dynamics(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
>>> res.qdd.shape, res.converged, res.residual < 1e-9
((11,), True, True)
"""
from . import models
from .algorithms import ALGORITHMS, Algorithm, resolve_algorithm
from .convergence import ConvergenceWarning, MuConventionWarning
from .dynamics import DynamicsResult, algorithm_plan, delassus, forward_dynamics
from .gplc import POLICIES, a_key, gplc_graph, lam_key, qdd_key
from .joints import Joint
from .kinematics import constraint_terms, kinematics
from .mechanism import GROUND, Connect, General, Link, Mechanism, Pose, Weld, at
from .pinocchio_io import from_pinocchio, load_mjcf, load_urdf
from .sdf import load_sdf

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Connect",
    "ConvergenceWarning",
    "DynamicsResult",
    "GROUND",
    "General",
    "Joint",
    "Link",
    "Mechanism",
    "MuConventionWarning",
    "POLICIES",
    "Pose",
    "Weld",
    "a_key",
    "algorithm_plan",
    "at",
    "constraint_terms",
    "delassus",
    "forward_dynamics",
    "from_pinocchio",
    "load_mjcf",
    "load_sdf",
    "load_urdf",
    "gplc_graph",
    "kinematics",
    "lam_key",
    "models",
    "qdd_key",
    "resolve_algorithm",
]
