"""Constrained dynamics of mechanisms as Gaussian factor graphs (GPLC).

The mechanism is a description (:class:`Mechanism`); :func:`gplc_graph` turns a
state into a factor graph whose variables and factors say what they are
(:mod:`mechanics.keys`); :func:`forward_dynamics` eliminates it under one of
the papers' algorithms -- each a (constraint policies, ordering policy) pair in
:data:`ALGORITHMS`, the policies in :mod:`mechanics.policies`, the orderings in
:mod:`mechanics.algorithms`.  :func:`mechanics.reference_aba.aba` is ABA on one
page in Featherstone's symbols (documentation and test oracle): the recursion
that ``ALGORITHMS["aba"]`` performs as an elimination.  Depends on
``factorgraph`` and ``elimination``.

>>> import numpy as np, mechanics
>>> mech = mechanics.models.fig4()
>>> res = mechanics.forward_dynamics(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
>>> res.qdd.shape, res.converged, res.residual < 1e-9
((11,), True, True)
"""
from factorgraph import __version__

from . import models
from .algorithms import ALGORITHMS, Algorithm, resolve_algorithm
from .convergence import ConvergenceWarning, MuConventionWarning, NumpyPathWarning
from .couplings import CouplingMap, Rotor, coupling_map, independent_coordinates, with_rotors
from .dynamics import DynamicsResult, PreparedDynamics, algorithm_plan, delassus, forward_dynamics, prepare
from .gplc import GPLCLayout, gplc_graph
from .inverse_dynamics import inverse_dynamics
from .keys import (
    ClusterCoordinates, JointAcceleration, LinkAcceleration, LoopTerm, Multiplier, Penalty, Prior, ProximalPrior, Torque,
    TreeJoint,
)
from .policies import ALM, POLICIES, ConstraintPolicy, Hard, PolicyNumbers, Prox, Soft, resolve_policies
from .joints import Joint
from .kinematics import constraint_terms, kinematics
from .mechanism import GROUND, Connect, Coupling, General, IncompatibleConstraintsWarning, Link, Mechanism, Pose, Weld, at
from .pinocchio_io import CouplingNotModelledWarning, from_pinocchio, load_mjcf, load_robot, load_urdf, robot_names
from .sdf import load_sdf
from .warmup import warmup

__all__ = [
    "__version__",
    "PreparedDynamics",
    "Rotor",
    "prepare",
    "ALGORITHMS",
    "ALM",
    "Algorithm",
    "Connect",
    "ConstraintPolicy",
    "ClusterCoordinates",
    "ConvergenceWarning",
    "Coupling",
    "CouplingMap",
    "CouplingNotModelledWarning",
    "IncompatibleConstraintsWarning",
    "DynamicsResult",
    "GPLCLayout",
    "GROUND",
    "General",
    "Hard",
    "Joint",
    "JointAcceleration",
    "Link",
    "LinkAcceleration",
    "LoopTerm",
    "Mechanism",
    "MuConventionWarning",
    "NumpyPathWarning",
    "Multiplier",
    "POLICIES",
    "Penalty",
    "Pose",
    "Prior",
    "PolicyNumbers",
    "Prox",
    "ProximalPrior",
    "Soft",
    "Torque",
    "TreeJoint",
    "Weld",
    "algorithm_plan",
    "coupling_map",
    "independent_coordinates",
    "with_rotors",
    "at",
    "constraint_terms",
    "delassus",
    "forward_dynamics",
    "from_pinocchio",
    "load_mjcf",
    "load_sdf",
    "load_robot",
    "load_urdf",
    "robot_names",
    "gplc_graph",
    "inverse_dynamics",
    "kinematics",
    "models",
    "resolve_algorithm",
    "resolve_policies",
    "warmup",
]
