"""Validation at the boundary: every public entry point of ``mechanics`` checks its input here.

Bad input raises ``TypeError`` (wrong kind of object: a string for ``mu``,
complex ``q``) or ``ValueError`` (right kind, wrong value: ``mu <= 0``, NaN in
``v``, a quaternion of norm 2, batch shapes that do not broadcast), with a
message that names the argument -- and the link, for a bad quaternion -- and
says what would fix it.  numpy scalar types (``np.float32(1e6)``,
``np.int64(50)``) are accepted wherever a Python number is.
"""
from __future__ import annotations

import difflib
import numbers

import numpy as np

from factorgraph.factors import real_array

from .mechanism import Connect, Coupling, Mechanism, Weld

FLOAT = np.dtype(np.float64)

UNIT_NORM_TOL = 1e-4
"""Largest ``| |u|^2 - 1 |`` accepted for a unit quaternion or (cos, sin) pair in ``q``.

It is the tolerance of Pinocchio's joint models (their debug assertion on
``quat.coeffs().squaredNorm()``).  Within it the part is normalised; beyond it
``q`` is refused, since a rotation built from a non-unit quaternion is not a
rotation (a norm of 2 scales the link's inertia by 16, a norm of 0 reads as the
identity).
"""


def check_mechanism(mechanism) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a mechanics.Mechanism, got {type(mechanism).__name__}; build one with "
            f"mechanics.Mechanism(links, constraints) or take a built-in from mechanics.models"
        )
    return mechanism


def check_real(value, name: str, advice: str, positive: bool = True) -> float:
    """A finite real number (Python or numpy scalar) as ``float``; ``> 0`` when ``positive``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number ({advice}), got {type(value).__name__} {value!r}")
    if not np.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be a finite number{' > 0' if positive else ''} ({advice}), got {value!r}")
    return float(value)


def check_mu(mu) -> float:
    return check_real(mu, "mu", "larger is stiffer; the papers use 1e5-1e7")


def check_tol(tol) -> float:
    return check_real(tol, "tol", "the outer loop's tolerance on the constraint residual, e.g. 1e-10")


BAUMGARTE_ADVICE = "Baumgarte gains (Kp, Kd) >= 0, e.g. (100.0, 20.0): the acceleration target -Kp e - Kd e_dot"


def check_baumgarte(mechanism: Mechanism, baumgarte) -> dict:
    """``baumgarte`` -- ``None``, one ``(Kp, Kd)`` for every Weld, Connect and Coupling, or ``{constraint name:
    (Kp, Kd)}`` -- as ``{name: (Kp, Kd)}`` of floats, the constraints without a correction (or with zero gains)
    left out.

    A General constraint has no position level: named in a dict it is refused; one pair for all passes it by.
    A Coupling without an ``offset`` has a velocity level only: one pair for all gives it ``(0, Kd)``; named
    with ``Kp > 0`` it is refused."""
    if baumgarte is None:
        return {}
    names = {c.name: c for c in mechanism.constraints}
    if isinstance(baumgarte, dict):
        for name in baumgarte:
            if name not in names:
                close = difflib.get_close_matches(str(name), list(names), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (its constraints: {', '.join(names) or 'none'})"
                raise ValueError(f"baumgarte: {mechanism.name!r} has no constraint {name!r}{hint}")
            if not isinstance(names[name], (Weld, Connect, Coupling)):
                raise ValueError(f"baumgarte: constraint {name!r} is a {type(names[name]).__name__}, which has no "
                                 f"position level to correct (only Weld, Connect and Coupling have one)")
        gains = {name: _gains(value, f"baumgarte[{name!r}]") for name, value in baumgarte.items()}
        for name, (Kp, _) in gains.items():
            if Kp and _velocity_only(names[name]):
                raise ValueError(f"baumgarte[{name!r}]: coupling {name!r} has no position level (no offset), so Kp "
                                 f"has nothing to correct: give (0, Kd), or the coupling an offset")
    else:
        pair = _gains(baumgarte, "baumgarte")
        gains = {c.name: (0.0, pair[1]) if _velocity_only(c) else pair for c in mechanism.constraints
                 if isinstance(c, (Weld, Connect, Coupling))}
    return {name: pair for name, pair in gains.items() if any(pair)}


def _velocity_only(c) -> bool:
    return isinstance(c, Coupling) and c.offset is None


def _gains(value, name: str) -> tuple:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError(f"{name} must be a pair (Kp, Kd) ({BAUMGARTE_ADVICE}), got {value!r}")
    pair = tuple(check_real(g, name, BAUMGARTE_ADVICE, positive=False) for g in value)
    if min(pair) < 0:
        raise ValueError(f"{name} must hold gains >= 0 ({BAUMGARTE_ADVICE}), got {value!r}")
    return pair


def check_max_iter(max_iter) -> int:
    if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, numbers.Integral):
        raise TypeError(
            f"max_iter must be an int (the most factorizations plus re-solves), got {type(max_iter).__name__} {max_iter!r}"
        )
    if max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
    return int(max_iter)


def state_array(mechanism: Mechanism, value, name: str, size: int, finite: bool = True) -> np.ndarray:
    """``value`` as a float array of shape ``(..., size)`` (and ``finite``), refused with a message naming
    ``name``."""
    array = real_array(value, name)
    if array.ndim == 0 or array.shape[-1] != size:
        raise ValueError(
            f"{name} has shape {array.shape} but mechanism {mechanism.name!r} needs (..., {size}) "
            f"(nq={mechanism.nq}, nv={mechanism.nv})"
        )
    if finite:
        bad = ~np.isfinite(array)
        if np.any(bad):
            raise ValueError(f"{name} contains NaN or inf at index {tuple(int(i) for i in np.argwhere(bad)[0])}")
    return array


def batch_shape(named: dict) -> tuple:
    """Broadcast of the batch (leading) shapes of ``{name: array (..., n)}``; ``ValueError`` naming the clash."""
    shapes = {name: array.shape[:-1] for name, array in named.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        pass
    names = list(shapes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            try:
                np.broadcast_shapes(shapes[a], shapes[b])
            except ValueError:
                raise ValueError(
                    f"{a} has batch shape {shapes[a]} but {b} has {shapes[b]}: the leading (batch) dimensions of "
                    f"{', '.join(names)} must broadcast against each other (equal, or 1, or missing)"
                ) from None
    raise ValueError(f"the batch shapes {shapes} do not broadcast together")  # pairwise fine, jointly not


def normalized_configuration(mechanism: Mechanism, q: np.ndarray) -> np.ndarray:
    """``q`` with its quaternions and (cos, sin) pairs normalised; ``ValueError`` if one is far from unit norm."""
    if q.ndim == 1 and all(abs(float(q[cols] @ q[cols]) - 1.0) <= UNIT_NORM_TOL for _, cols, _ in mechanism.unit_norm_columns):
        for _, cols, _ in mechanism.unit_norm_columns:  # one state (the common call): scalar arithmetic
            q[cols] /= np.sqrt(q[cols] @ q[cols])
        return q
    for link, cols, what in mechanism.unit_norm_columns:
        norm = np.linalg.norm(q[..., cols], axis=-1)
        bad = np.abs(norm**2 - 1.0) > UNIT_NORM_TOL
        if np.any(bad):
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            at = f" at batch index {where}" if where else ""
            raise ValueError(
                f"q: the {what} of link {link.name!r} ({link.joint.kind} joint, q[..., {cols.start}:{cols.stop}]) "
                f"has norm {float(norm[where]):.6g}{at}; it must have unit norm (within |norm^2 - 1| <= "
                f"{UNIT_NORM_TOL:g}, then it is normalised) -- divide it by its norm, or start from "
                f"mechanism.neutral_configuration()"
            )
        q[..., cols] /= norm[..., None]
    return q


def plain_state(mechanism: Mechanism, q, v, tau) -> bool:
    """One unbatched state of contiguous float64 arrays of the right sizes (their values unchecked: the compiled
    kernel checks those itself, and refuses what :func:`check_state` would; a strided array would make numba
    compile the kernel once more, for its layout)."""
    return (type(q) is np.ndarray and type(v) is np.ndarray and type(tau) is np.ndarray
            and q.shape == (mechanism.nq,) and v.shape == tau.shape == (mechanism.nv,)
            and q.dtype == FLOAT and v.dtype == FLOAT and tau.dtype == FLOAT  # (against a dtype: no conversion)
            and q.flags.c_contiguous and v.flags.c_contiguous and tau.flags.c_contiguous)


def _one_plain_state(mechanism: Mechanism, q, v, tau) -> bool:
    """A :func:`plain_state` that is finite (a sum is finite only if every term is; one that overflows takes
    the general path, which says where a NaN or inf is, if any)."""
    return plain_state(mechanism, q, v, tau) and bool(np.isfinite(q.sum() + v.sum() + tau.sum()))


def state_arrays(mechanism: Mechanism, q, v, tau, finite: bool = True) -> tuple:
    """Float copies ``q (..., nq)``, ``v (..., nv)``, ``tau (..., nv)`` (and ``finite``) whose batch shapes
    broadcast against each other; ``q``'s unit parts not yet normalised (:func:`normalized_configuration`)."""
    arrays = {
        "q": state_array(mechanism, q, "q", mechanism.nq, finite),
        "v": state_array(mechanism, v, "v", mechanism.nv, finite),
        "tau": state_array(mechanism, tau, "tau", mechanism.nv, finite),
    }
    batch_shape(arrays)
    return arrays["q"], arrays["v"], arrays["tau"]


def check_state(mechanism: Mechanism, q, v, tau):
    """Validated float copies ``q (..., nq)`` (unit parts normalised), ``v (..., nv)``, ``tau (..., nv)``.

    Their batch shapes must broadcast against each other.
    """
    check_mechanism(mechanism)
    if _one_plain_state(mechanism, q, v, tau):  # the common call, checked without temporaries
        return normalized_configuration(mechanism, q.copy()), v.copy(), tau.copy()
    q, v, tau = state_arrays(mechanism, q, v, tau)
    return normalized_configuration(mechanism, q), v, tau


def check_multipliers(mechanism: Mechanism, value, name: str, state: dict) -> np.ndarray:
    """Stacked constraint forces / multipliers ``(..., m)`` whose batch broadcasts with the state's arrays."""
    m = mechanism.constraint_dim
    array = real_array(value, name)
    if array.ndim == 0 or array.shape[-1] != m or not np.all(np.isfinite(array)):
        raise ValueError(
            f"{name} must be a finite array of shape (..., {m}) (one entry per constraint row of "
            f"{mechanism.name!r}), got shape {array.shape}"
        )
    batch_shape({**state, name: array})
    return array
