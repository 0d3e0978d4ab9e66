"""Convergence status of :func:`mechanics.forward_dynamics`, per batch element, and the warnings that report it.

``converged`` says the returned accelerations satisfy the constraints, by policy:

* ``alm`` / ``prox``: the constraint residual ``max |K a - k|`` is within
  ``max(tol, RESIDUAL_RTOL (1 + max |k|))`` -- ``tol``, or the threshold the
  ``hard`` policy accepts a solution with where ``tol`` is below that round-off
  floor (``tol=1e-12`` on a robot whose residual stalls at 1e-11 has converged
  as far as floating point allows).  The loop itself stops on 000's rule
  ``min(||qdd^k - qdd^(k-1)||_inf, ||K a - k||_inf) < tol`` or at ``max_iter``.
  Not converged: ``max_iter`` reached with the residual above that tolerance
  (too few iterations, or mu too small), or the accelerations settled while the
  residual stays (inconsistent constraints: no motion meets them all).
* ``hard``: one solve; a residual above ``RESIDUAL_RTOL (1 + max |k|)`` raises
  :class:`elimination.SingularProblemError` (dependent or inconsistent
  constraints), so a returned result has converged.
* ``soft``: a penalty with no outer loop, whose residual ``-lambda / mu`` is part
  of its answer.  ``converged`` says the soft constraints *hold*: one
  augmented-Lagrangian correction -- the step from the soft answer towards the
  hard one, re-solved on the same factorization (two sweeps, not counted in
  ``iterations``) -- removes at least half the residual (2-norm per element,
  ``SOFT_CONTRACTION``), or the residual is already within the tolerance above.
  For consistent constraints the correction multiplies the residual by
  ``(I + mu D)^-1`` (``D`` the Delassus matrix): by 0.03 or less on every
  built-in mechanism at the default mu=1e6; the part of an inconsistent constraint that no motion can
  remove does not shrink at all.  So ``converged`` is False where the
  constraints are inconsistent, and also where mu is too small for them to hold
  (``mu`` times the smallest eigenvalue of ``D`` below about 1): raise mu, or
  run ``alm`` / ``prox`` to tell the two apart.  ``tol`` and ``max_iter`` play
  no other part.

A run with an element that has not converged issues one :class:`ConvergenceWarning` that names the
cause a dense check of the state finds (:mod:`mechanics.diagnosis`: inconsistent constraints, a
singular configuration, an ill-conditioned problem, or too few iterations) and what helps; the
result's ``cause`` says it per element.
"""
from __future__ import annotations

import sys
import warnings
from collections import Counter
from typing import Callable

import numpy as np

from .policies import HOLDS

RESIDUAL_RTOL = 1e-8  # round-off floor of a constraint residual, relative to 1 + max |k|
SOFT_CONTRACTION = 0.5  # soft: the residual ratio after one ALM correction above which the constraints do not hold


class ConvergenceWarning(RuntimeWarning):
    """:func:`mechanics.forward_dynamics` stopped at ``max_iter``, or with the constraint residual above ``tol``.

    The result's ``converged`` field says which batch elements are affected, its ``cause`` why
    (:mod:`mechanics.diagnosis`).
    Turn it into an error with ``warnings.simplefilter("error", mechanics.ConvergenceWarning)``.
    """


class MuConventionWarning(UserWarning):
    """``mu < 1`` under the ``prox`` or ``alm`` policy: most likely Pinocchio's convention.

    Here ``mu`` is a stiffness (larger is stiffer, 1e5-1e7 in the papers);
    Pinocchio's ``ProximalSettings`` ``mu`` is a compliance, its inverse:
    Pinocchio's ``mu=1e-12`` is ``mu=1e12`` here.  A user warning (a parameter
    that looks like a mistake) rather than a :class:`ConvergenceWarning`, which
    reports an outcome.
    """


class NumpyPathWarning(UserWarning):
    """A prepared call runs on the numpy path where a compiled one was asked for: a constraint policy whose
    ``update`` or ``moving_term`` is arithmetic of its own, which no
    :class:`~mechanics.policies.PolicyNumbers` says (the compiled kernels read only those).  Its answers are
    right; it is slower.  ``backend="numba"`` refuses such a policy instead.
    """


def element_max(arrays, batch: tuple) -> np.ndarray:
    """``max |a|`` over the last axis of every array, per batch element: shape ``batch``."""
    out = np.zeros(batch)
    for a in arrays:
        out = np.maximum(out, np.max(np.abs(a), axis=-1, initial=0.0))
    return out


def element_norm(arrays, batch: tuple) -> np.ndarray:
    """2-norm of the stacked last axes of the arrays, per batch element: shape ``batch``."""
    out = np.zeros(batch)
    for a in arrays:
        out = out + np.sum(np.square(a), axis=-1)
    return np.sqrt(out)


def residual_tolerance(tol: float, terms: dict, batch: tuple) -> np.ndarray:
    """``max(tol, RESIDUAL_RTOL (1 + max |k|))`` per batch element."""
    return np.maximum(tol, RESIDUAL_RTOL * (1.0 + element_max((t.k for t in terms.values()), batch)))


def warn_inverse_mu(mu: float, policies: set, label: str, stacklevel: int) -> None:
    """Warn (:class:`MuConventionWarning`) when ``mu < 1`` and some constraint's policy iterates with a stiffness
    (``prox``, ``alm``); ``policies`` are the :class:`~mechanics.policies.PolicyNumbers` in use."""
    if mu < 1.0 and any(p.iterates and p.stiffness for p in policies):
        warnings.warn(
            f"{label}: mu={mu:g} < 1 -- here mu is a stiffness, larger is stiffer (the papers use 1e5-1e7), "
            f"the inverse of Pinocchio's ProximalSettings mu: Pinocchio's mu={mu:g} is mu={1.0 / mu:g} here. "
            f"With mu < 1 the constraints are barely enforced.",
            MuConventionWarning, stacklevel=stacklevel + 1,
        )


def shown(category: type, stacklevel: int) -> bool:
    """Whether ``warnings.warn(text, category, stacklevel)`` made here would be shown, as far as the filters
    tell without the text: False only where the first filter that matches the category, module and line
    ignores every message.  (A diagnosis costs milliseconds: a batch loop that ignores the warning should
    not pay for its words.)"""
    try:
        frame = sys._getframe(stacklevel)
    except ValueError:
        return True
    module, lineno = frame.f_globals.get("__name__", "<string>"), frame.f_lineno
    for action, message, cat, mod, line in warnings.filters:
        if issubclass(category, cat) and (mod is None or mod.match(module)) and line in (0, lineno):
            return message is not None or action != "ignore"  # (a filter on the text: let warnings decide)
    return warnings.defaultaction != "ignore"


def warn_not_converged(label: str, policies: set, tol: float, max_iter: int, converged: np.ndarray,
                       iterations: np.ndarray, residual: np.ndarray, diagnosed: Callable, stacklevel: int) -> None:
    """One :class:`ConvergenceWarning` for the elements of ``converged`` (shape ``batch``) that are False;
    ``policies`` are the :class:`~mechanics.policies.PolicyNumbers` in use, ``diagnosed()`` gives a
    :class:`mechanics.diagnosis.Diagnosis` per failed element (called only where the warning is shown)."""
    failed = ~converged
    if not failed.any() or not shown(ConvergenceWarning, stacklevel + 1):
        return
    capped = bool(np.any(failed & (iterations >= max_iter))) and any(p.iterates for p in policies)
    soft = all(p.test == HOLDS for p in policies)  # (one correction, no iterations: tol and max_iter play no part)
    where = f" in {int(failed.sum())} of {failed.size} batch elements" if converged.ndim else ""
    worst = float(np.max(residual[failed]))
    if soft:
        reached = f"constraint residual {worst:.1e} (tol={tol:g} and max_iter={max_iter} do not apply to the soft policy)"
    elif capped:
        reached = f"constraint residual {worst:.1e} > tol={tol:g}, stopped at max_iter={max_iter}"
    else:
        reached = (f"constraint residual {worst:.1e} > tol={tol:g} after {int(np.max(iterations[failed]))} "
                   f"iteration(s) (max_iter={max_iter})")
    found = diagnosed()
    explained = {}  # each cause in the words of its element with the largest residual
    for i in np.argsort(-np.atleast_1d(residual[failed]), kind="stable"):
        explained.setdefault(found[i].cause, found[i].explanation(max_iter, soft=soft))
    counts = Counter(d.cause for d in found)
    said = [f"Cause: {words}" if not converged.ndim else f"Cause of {counts[cause]}: {words}"
            for cause, words in explained.items()]
    warnings.warn(
        f"{label} did not converge{where}: {reached}. {'. '.join(said)}. See result.cause and result.converged.",
        ConvergenceWarning, stacklevel=stacklevel + 1,
    )
