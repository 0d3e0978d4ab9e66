"""Ordering comparison on a mechanism: symbolic cost, convergence and measured time per solve.

:func:`compare` runs every algorithm on one state of a mechanism and returns
:class:`Row` objects; :func:`format_table`, :func:`write_csv` and
:func:`write_json` present them.  :func:`scale` sweeps a size parameter of a
built-in mechanism; :func:`plot_scaling` draws time and flops against size
(log-log) with matplotlib (optional extra ``plot``).  Both report what they are
doing as :class:`Step` events to an ``on_step`` callback, for progress displays.
"""
from __future__ import annotations

import csv
import json
import sys
import textwrap
import time
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Callable

import numpy as np

import elimination
import mechanics
from mechanics import ALGORITHMS, ConvergenceWarning, JointAcceleration, MuConventionWarning, gplc_graph, resolve_algorithm
from mechanics.checks import check_mu
from mechanics.convergence import warn_inverse_mu
from mechanics.diagnosis import REMEDIES
from mechanics.policies import EXACT


@dataclass
class Row:
    """One algorithm on one mechanism.

    ``flops``, ``max_front`` and ``fill_edges`` come from the symbolic plan;
    ``iterations`` and ``residual`` from the solve; ``seconds`` is the median
    time of ``forward_dynamics`` on the compiled executor (``backend="auto"``;
    plan cached, kinematics, graph and outer iterations included);
    ``elimination_seconds`` the median time of one compiled factorization and
    one solve of the algorithm's graph at that state, nothing else
    (:func:`elimination.compiled_elimination`): the time that tracks ``flops``;
    ``deviation`` is ``max |qdd - qdd_ref| / max |qdd_ref|`` against the dense
    KKT solve of the hard problem (``None`` when that is singular); ``note``
    says why each empty cell is empty -- the algorithm, the reason and the
    fix in one sentence (:func:`refusal_note`) -- and
    ``"not converged (residual 3.1e-01): ill-conditioned -- raise max_iter or mu"``
    when the result's ``converged`` is False (:func:`not_converged_note`; its
    ConvergenceWarning is not repeated); several are joined by
    ``"; "``.
    """

    algorithm: str
    policy: str
    flops: float | None = None
    max_front: int | None = None
    fill_edges: int | None = None
    iterations: int | None = None
    residual: float | None = None
    seconds: float | None = None
    elimination_seconds: float | None = None
    deviation: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Step:
    """What a long run is about to do, for a progress display.

    ``phase`` is ``"building"`` (a mechanism of a size sweep), ``"reference"``
    (the dense KKT solve), ``"planning"`` (an algorithm's symbolic plan: the
    slow part on large mechanisms), ``"solving"``, ``"timing"``, ``"done"``
    (that algorithm's row is finished), or ``"drawing"`` (a picture of
    ``viz.gallery.render_gallery``).  ``algorithm`` names the algorithm (``None``
    when no algorithm is concerned); ``index`` of ``total`` counts the algorithms
    of this mechanism (the pictures, when drawing); ``size`` is the sweep's size
    in :func:`scale`.
    """

    phase: str
    algorithm: str | None = None
    index: int = 0
    total: int = 0
    size: int | None = None


OnStep = Callable[[Step], None]


def _ignore(step: Step) -> None:
    pass


def applicable(mech, algorithms=None) -> list:
    """``(name, Algorithm)`` to compare: the given ones (names, ``"POLICY/ORDERING"`` texts, or
    ``(policies, ordering)`` pairs), or every named algorithm that applies to ``mech``."""
    if algorithms is None:
        return [(n, a) for n, a in ALGORITHMS.items() if _scope_problem(mech, n, a) is None]
    return [resolve_algorithm(a) for a in algorithms]


def _scope_problem(mech, name: str, algo) -> str | None:
    try:
        algo.check(mech, name)
    except ValueError as error:
        return str(error)
    return None


def _reference(mech, q, v, tau):
    try:
        x = gplc_graph(mech, q, v, tau, policy="hard").dense_solve()
    except ValueError:
        return None
    return np.concatenate([x[JointAcceleration(l.name)] for l in mech.links if l.joint.nv])


def compare(mech, algorithms=None, mu: float = 1e6, tol: float = 1e-10, max_iter: int = 50, repeat: int = 5,
            seed: int = 0, on_step: OnStep | None = None) -> list:
    """Run each algorithm on one random state of ``mech``; return a :class:`Row` per algorithm.

    ``on_step``, if given, is called with a :class:`Step` before the reference
    solve and before each phase of each algorithm (planning, solving, timing),
    and once each algorithm is done.

    Examples
    --------
    >>> rows = compare(mechanics.models.four_bar(), ["proxbbo", "lcaba"], repeat=1)
    >>> [r.algorithm for r in rows], all(r.deviation < 1e-8 for r in rows)
    (['proxbbo', 'lcaba'], True)
    """
    mu = check_mu(mu)
    rng = np.random.default_rng(seed)
    q = mech.random_configuration(rng)
    v, tau = rng.normal(size=mech.nv), rng.normal(size=mech.nv)
    on_step = on_step or _ignore
    chosen = applicable(mech, algorithms)
    on_step(Step("reference", total=len(chosen)))
    reference = _reference(mech, q, v, tau)
    policies = {p for _, a in chosen for p in a.policy_label.split("+")}
    warn_inverse_mu(mu, policies, "compare", stacklevel=2)  # once, not once per algorithm
    rows = []
    for k, (name, algo) in enumerate(chosen):
        def phase(label: str, name=name, k=k) -> None:
            on_step(Step(label, name, k, len(chosen)))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported in the note
            warnings.simplefilter("ignore", MuConventionWarning)
            rows.append(_row(mech, name, algo, q, v, tau, reference, mu, tol, max_iter, repeat, phase))
        phase("done")
    return rows


def _row(mech, name: str, algo, q, v, tau, reference, mu: float, tol: float, max_iter: int, repeat: int,
         phase: Callable[[str], None] = lambda label: None) -> Row:
    """One algorithm's row: plan cost, one solve, its timing and its deviation from ``reference``;
    ``phase(label)`` is told before each of planning, solving and timing."""
    row = Row(name, algo.policy_label)
    problem = _scope_problem(mech, name, algo)
    if problem:
        row.note = problem  # the check's message names the algorithm, the reason and what to use instead
        return row
    phase("planning")
    _, plan = mechanics.algorithm_plan(mech, algo)
    row.flops, row.max_front, row.fill_edges = plan.flops, plan.max_front, len(plan.fill_edges)

    def solve():
        return mechanics.forward_dynamics(mech, q, v, tau, algorithm=algo, mu=mu, tol=tol, max_iter=max_iter,
                                          backend="auto")

    phase("solving")
    try:
        result = solve()
    except elimination.SingularProblemError as error:
        row.note = refusal_note(name, algo, mech, error)
        return row
    row.iterations, row.residual = result.iterations, result.residual
    notes = [] if result.converged else [not_converged_note(result)]
    phase("timing")
    # samples of SAMPLE seconds: many calls each, so neither the first calls after planning (cold caches)
    # nor the clock's resolution weigh on the median (one call a sample: rows of one plan read 2x apart)
    row.seconds = median_seconds(solve, max(repeat, 5), sample=SAMPLE)
    row.elimination_seconds, why = _elimination_seconds(mech, algo, plan, q, v, tau, mu, repeat)
    if why:
        notes.append(f"{name}: no elim ms -- {why}")
    if reference is not None:
        row.deviation = float(np.max(np.abs(result.qdd - reference)) / max(np.max(np.abs(reference)), 1e-300))
    else:
        notes.append(NO_REFERENCE)
    row.note = "; ".join(notes)
    return row


NO_REFERENCE = ("no deviation -- the dense KKT solve of the hard problem is singular at this state (dependent "
                "constraints), so there is no reference to compare with")

REFUSALS = {
    "inconsistent": "its constraints contradict each other at this state",
    "ill-conditioned": "it is too ill-conditioned at this state for the solution to be verified",
    "undetermined": "some of its accelerations are undetermined at this state",
}
CONTRADICTION_FIX = "correct or remove the contradicting constraints (no algorithm can meet them all)"


def not_converged_note(result) -> str:
    """The note of a row whose run did not converge: its residual, the cause a dense check of the state finds
    (:mod:`mechanics.diagnosis`) and what helps, e.g. ``not converged (residual 2.5e+00): inconsistent -- fix
    the constraints or the velocities``."""
    return f"not converged (residual {result.residual:.1e}): {result.cause} -- {REMEDIES[result.cause]}"


def refusal_note(name: str, algo, mech, error: elimination.SingularProblemError) -> str:
    """One sentence for a solve that raised ``error``: the algorithm as the user named it, the reason, the fix.

    Examples
    --------
    >>> error = elimination.SingularProblemError("...", kind="singular")
    >>> refusal_note("pv", ALGORITHMS["pv"], mechanics.models.four_bar(), error)  # doctest: +NORMALIZE_WHITESPACE
    "pv: the hard policy cannot solve 'four_bar' -- its constraints are dependent at this state;
    use proxpv or another prox algorithm (proxbbo, proxltl)"
    """
    policies = list(dict.fromkeys(mechanics.resolve_policies(algo.policies, mech).values()))
    reason = _refusal_reason(error.kind, policies)
    fix = CONTRADICTION_FIX if error.kind == "inconsistent" else " or ".join(dict.fromkeys(p.fix for p in policies))
    return f"{name}: the {algo.policy_label} policy cannot solve {mech.name!r} -- {reason}; {fix}"


def _refusal_reason(kind: str, policies: list) -> str:
    """Why a solve was refused, from the error's ``kind`` (``""``: the hard policy's residual check) and the
    policies in use."""
    if kind in REFUSALS:
        return REFUSALS[kind]
    if not any(p.numbers.test == EXACT for p in policies):
        return "a pivot is singular at this state"
    if kind == "singular":
        return "its constraints are dependent at this state"
    return "its answer misses the constraints beyond round-off: they are dependent, or nearly so, at this state"


SAMPLE = 2e-3  # seconds a timing sample lasts at least


def median_seconds(call, repeat: int, sample: float = 0.0) -> float:
    """Median over ``repeat`` samples of the time per call; a sample repeats the call until it lasts
    ``sample`` seconds (short calls: the clock's resolution and its own cost would dominate)."""
    times = []
    for _ in range(max(1, repeat)):
        calls, start = 0, time.perf_counter()
        while True:
            call()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= sample:
                break
        times.append(elapsed / calls)
    return float(np.median(times))


def _elimination_seconds(mech, algo, plan, q, v, tau, mu: float, repeat: int) -> tuple:
    """``(seconds, None)``: one compiled factorization and solve of the algorithm's graph at this state; or
    ``(None, why)`` where the compiled kernel does not take the plan or refuses the state."""
    graph = gplc_graph(mech, q, v, tau, policy=algo.policies, mu=mu)
    try:
        run = elimination.compiled_elimination(graph, plan)
    except ValueError as error:
        return None, f"the plan does not run in compiled code ({error}); ms/solve times the numpy path"
    try:
        run()  # compiled (or loaded from disk) before it is timed
    except elimination.SingularProblemError:
        return None, ("the compiled kernel hands this state to the numpy path (a suspect pivot or dependent hard "
                      "rows), whose time ms/solve includes")
    return median_seconds(run, max(repeat, 5), sample=SAMPLE), None


COLUMNS = ("algorithm", "policy", "flops", "max_front", "fill_edges", "iterations", "residual", "seconds",
           "elimination_seconds", "deviation", "note")
MILLISECONDS = ("seconds", "elimination_seconds")  # shown in ms by format_table


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) >= 1e-2 or value == 0 else f"{value:.1e}"
    return str(value)


def format_table(rows: list, title: str = "") -> str:
    """Fixed-width text table (times shown in ms: ``ms/solve`` the whole call, ``elim ms`` the elimination alone).

    A row's note -- why a cell is empty, or that the run did not converge -- is
    a footnote under the table, marked ``[1]``, ``[2]``... in the note column.
    """
    header = ("algorithm", "policy", "flops", "max front", "fill", "iter", "residual", "ms/solve", "elim ms", "deviation",
              "note")
    marks, footnotes = footnote_marks([r.note for r in rows])
    body = [[_cell(_ms(getattr(r, c)) if c in MILLISECONDS else getattr(r, c)) for c in COLUMNS[:-1]] + [mark]
            for r, mark in zip(rows, marks)]
    return _fixed_width(header, body, title) + footnotes


def footnote_marks(notes: list) -> tuple:
    """``(marks, footnotes)``: ``"[k]"`` per non-empty note (one number per distinct text) and the lines
    ``"\n[k] note"`` to print under a table (``""`` when no note)."""
    numbers = {note: k + 1 for k, note in enumerate(dict.fromkeys(n for n in notes if n))}
    marks = [f"[{numbers[n]}]" if n else "" for n in notes]
    return marks, "".join(f"\n[{k}] {note}" for note, k in numbers.items())


def _fixed_width(header: tuple, body: list, title: str = "") -> str:
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(lines)


def format_points(points: list) -> str:
    """The points of :func:`scale` as a fixed-width table, notes as footnotes (as :func:`format_table`)."""
    header = ("size", "algorithm", "flops", "ms/solve", "note")
    marks, footnotes = footnote_marks([p.get("note", "") for p in points])
    body = [[str(p["size"]), p["algorithm"], _cell(p["flops"]), _cell(_ms(p["seconds"])), mark]
            for p, mark in zip(points, marks)]
    return _fixed_width(header, body) + footnotes


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def write_csv(rows: list, path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)


def write_json(rows: list, path, **meta) -> None:
    with open(path, "w") as handle:
        json.dump({**meta, "rows": [asdict(r) for r in rows]}, handle, indent=1)


def scale(model: str, param: str, sizes, algorithms=None, mu: float = 1e6, repeat: int = 3, progress=sys.stderr,
          on_step: OnStep | None = None) -> list:
    """Compare algorithms over a size sweep of a built-in mechanism.

    Returns dicts ``{"size", "algorithm", "flops", "seconds", ...}``.  Prints a
    text progress bar on the stream ``progress`` (``None`` for silence) that
    moves once per algorithm and size; ``on_step``, if given, receives every
    :class:`Step` of the sweep (``size`` set), for a display of one's own.
    """
    make = mechanics.models.MODELS[model]
    bar = _TextBar(progress, param, len(sizes)) if progress is not None else _ignore
    report = on_step or _ignore
    out = []
    for size in sizes:
        def step(event: Step, size=size) -> None:
            event = replace(event, size=size)
            bar(event)
            report(event)

        step(Step("building"))
        mech = make(**{param: size})
        for row in compare(mech, algorithms, mu=mu, repeat=repeat, on_step=step):
            out.append({"size": size, "mechanism": mech.name, "nv": mech.nv, "m": mech.constraint_dim, **asdict(row)})
    if progress is not None:
        print(file=progress)
    return out


class _TextBar:
    """``[#####.....] 3/8 n=16: planning proxltl`` on one line of ``stream``, moved once per algorithm and size."""

    WIDTH = 30

    def __init__(self, stream, param: str, sizes: int):
        self.stream, self.param, self.sizes = stream, param, sizes
        self.done, self.total, self.size_index, self.last = 0, 0, -1, 0

    def __call__(self, step: Step) -> None:
        if step.phase == "building":
            self.size_index += 1
        elif step.phase == "reference":  # this size's count of algorithms, assumed for the sizes still to come
            self.total = self.done + step.total * (self.sizes - self.size_index)
        elif step.phase == "done":
            self.done += 1
        filled = int(self.WIDTH * self.done / self.total) if self.total else 0
        text = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total or '?'} "
                f"{self.param}={step.size}: {step.phase}" + (f" {step.algorithm}" if step.algorithm else ""))
        print(f"\r{text.ljust(self.last)}", end="", file=self.stream, flush=True)
        self.last = len(text)


def plot_scaling(points: list, path, title: str = "") -> None:
    """Log-log time and flops against size, one line per algorithm (needs matplotlib: extra ``plot``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib (or, in a checkout of gaussgraph, "
                          "pip install '.[plot]')") from None
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    markers = "os^vD<>ph*"
    all_sizes = sorted({p["size"] for p in points})
    noted = False
    for k, name in enumerate(dict.fromkeys(p["algorithm"] for p in points)):
        mine = [p for p in points if p["algorithm"] == name]
        # algorithms with equal flops lie on one another: distinct markers and dashes keep each visible
        style = {"marker": markers[k % len(markers)], "linestyle": "-" if k < 10 else "--",
                 "markerfacecolor": "none" if k % 2 else None}
        for axis, field, unit in ((axes[0], "seconds", 1e3), (axes[1], "flops", 1.0)):
            shown = [p for p in mine if p[field] is not None]
            label = legend_label(name, [p for p in mine if p[field] is None])
            noted |= label != name
            axis.loglog([p["size"] for p in shown], [p[field] * unit for p in shown], label=label, **style)
    legends = []
    for axis in axes:  # ticks at the sizes measured, written as numbers (not 2x10^0)
        axis.xaxis.set_major_locator(FixedLocator(all_sizes))
        axis.xaxis.set_minor_locator(NullLocator())
        axis.xaxis.set_major_formatter(ScalarFormatter())
        axis.grid(True, which="major", alpha=0.3)
        # long notes would hide the lines: below the axes then, outside the layout (it would squeeze the axes)
        below = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.15)} if noted else {}
        legends.append(axis.legend(fontsize=8, **below))
        legends[-1].set_in_layout(not noted)
    axes[0].set(xlabel="size", ylabel="ms per solve", title=title or "time")
    axes[1].set(xlabel="size", ylabel="estimated flops", title="symbolic cost (plan flops)")
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight", bbox_extra_artists=legends)
    plt.close(fig)


def legend_label(name: str, missing: list) -> str:
    """``name``, or ``"name (no point at 32: why)"`` for the points of ``missing`` (their notes say why;
    the mechanism of a size is "it", so that one reason serves every size), wrapped to about 60 characters.

    >>> legend_label("pv", [{"size": 32, "mechanism": "x_32", "note": "pv: the hard policy refuses 'x_32'"}])
    'pv (no point at 32: the hard policy refuses it)'
    """
    if not missing:
        return name
    sizes = ", ".join(str(p["size"]) for p in missing)
    reasons = dict.fromkeys(_point_reason(name, p) for p in missing)
    return textwrap.fill(f"{name} (no point at {sizes}: {'; '.join(reasons)})", 60)


def _point_reason(name: str, point: dict) -> str:
    reason = point.get("note", "").removeprefix(f"{name}: ") or "no value"
    return reason.replace(repr(point["mechanism"]), "it") if "mechanism" in point else reason
