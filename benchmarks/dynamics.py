"""Constrained forward dynamics, ours against Pinocchio, interleaved in one process.

What is measured, per scene and per algorithm pair (ours <-> Pinocchio's):

* ``aba``     <-> ``pin.aba`` on the tree (constraints removed; optional),
* ``lcaba``   <-> ``pin.lcaba`` (``data.oa`` reset before every call: Pinocchio 4.1 reads it stale
  for 6-D contacts; the reset is outside the timing),
* ``proxbbo`` <-> ``pin.constraintDynamics``,
* ``pv``, ``proxpv``, ``proxltl``, ``min_fill`` ... <-> ``pin.constraintDynamics`` (optional),

in three modes:

* ``single``: unbatched ``mechanics.forward_dynamics`` calls against unbatched Pinocchio calls;
* ``prep``: unbatched calls of a prepared call (``mechanics.prepare`` made once, outside the timing:
  validated and planned once, what a simulation loop calls) against unbatched Pinocchio calls;
* ``batch B``: one ``forward_dynamics`` call over ``B`` distinct random states (q, v, tau differ per
  element) against a Python loop of ``B`` Pinocchio calls on the same states.  Pinocchio's
  per-state time is the *sum of per-call* ``perf_counter`` times over the ``B`` calls divided by
  ``B`` (the loop, the indexing and the ``data.oa`` reset are not counted, and one untimed call
  first re-warms the caches our call evicted: Pinocchio's best case); ours is the time of the one
  call divided by ``B``.  A batch of fewer than 10 states runs 10 times over on Pinocchio's side
  and each state's median is its time.

The single and prepared rows run over ``SINGLE_STATES`` (8) distinct states -- one state's
iterations would make the row that state's -- turned by one each repeat, so that each state is
in turn the first.  Per repeat: our first call, on the first state, right after Pinocchio's calls
(its caches cold; the ``ratio`` column: against Pinocchio's warm median on the same state), then,
as Pinocchio's side is timed, 10 rounds over the states (``warm``: each state's median, their
mean, against Pinocchio's; what a loop that calls the dynamics back to back sees).  Pinocchio's
first call of each repeat, on the first state right after our calls, is timed too: ``cold`` is our
first call against it, both sides' caches as cold, the same state (what a call between other work
sees).  B = 1 is one state, timed the same way (its ``warm``: the median of 10 calls after the first).

``aba`` rows run the scene's tree (``Mechanism.without_constraints()``) against ``pin.aba``; they have
no iterations ("-").  The two sides alternate repeat by repeat (interleaved); the tables show medians over the repeats,
the ratio ours / Pinocchio of the per-state medians, the outer iterations of both (ours: the
factorizations plus re-solves of ``DynamicsResult.iterations``; Pinocchio: ``ProximalSettings.iter``;
``a-b`` is the range over the states), and the deviation of ``qdd`` between the two,
``max |qdd_ours - qdd_pin| / max(1, max |qdd_pin|)``, the largest over the states of the mode.
The peak RSS of the largest batch is measured in a fresh child process per (scene, algorithm),
since a process's high-water mark cannot be reset: the child builds the scene and the states, reads
its peak RSS, makes one ``forward_dynamics`` call over them and reads it again.  The peak is
``VmHWM`` from ``/proc/self/status`` (``resource.getrusage(RUSAGE_SELF).ru_maxrss`` where there is
no ``/proc``): on Linux ``ru_maxrss`` survives ``fork`` + ``exec``, so a child of this process
would report the parent's peak.

Settings, matched on both sides: our ``mu = 1e6`` = 1 / Pinocchio's ``ProximalSettings`` mu
(1e-6), ``tol = 1e-10`` (Pinocchio's ``accuracy``), ``max_iter = 50``.  ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` are set to 1 before numpy is imported (tiny kernels
slow down 2-10x under OpenBLAS threading on these 2-core machines).

Scenes (constraint placements fixed at one random configuration; the states of every mode are
drawn afresh: ``pin.randomConfiguration`` with the free-flyer position limited to [-1, 1], v and
tau standard normal):

* ``talos_feet``: Talos, both ankles welded to the ground (2 CONTACT_6D, m = 12);
* ``solo12_feet``: Solo12, four point feet (4 CONTACT_3D, m = 12);
* ``cassie``: Cassie's four closed loops read from ``cassie_v2.sdf`` by ``mechanics.load_sdf``; the
  Pinocchio side is the same mechanism rebuilt by ``tests.mechanics.pinocchio_oracle.pinocchio_model_of``;
  states: the file's (loop-closed) pose with every joint perturbed by N(0, 0.1 rad), a random base
  position and orientation (near the closed pose two loop rows are almost redundant: a few states
  in a thousand take ``max_iter`` iterations on both sides);
* ``allegro_cube``: one Allegro hand holding a free cube, four fingertip contacts
  (``mechanics.pinocchio_io.allegro_grasp(1)``, 000 Table II case 1);
* ``two_hands_cube``: two Allegro hands holding one cube, eight contacts (case 2; redundant).

000 Table II's "two Digits + box" is not built: example-robot-data 6.0 has no Digit model, and the
repository's ``mechanics.models.digit_leg()`` is a planar Digit-like leg whose loops are 2-row
(planar) ``Connect`` constraints, which Pinocchio's ``RigidConstraintModel`` (CONTACT_3D / 6D only)
cannot state, so there is no Pinocchio counterpart to compare with.

Repeats: ``--repeat`` (default 11) for ``single``, ``prep`` and batches up to 64, ``--repeat-large``
(default 3) for larger batches -- the default (compiled) backend takes 0.02-0.2 ms per state batched
(``--backend numpy``, the reference path: 0.2-2.5 ms, one B = 4096 call 1-10 s).  Each mode is warmed
up by one call on each side first, except batches above 64 (the plan is already cached on the
mechanism by then).  With ``--repeat 5 --repeat-large 2`` (five scenes; ``aba``, ``lcaba``,
``proxbbo``; B = 1, 64, 1024, 4096; RSS children) a run takes about a minute on a 2-core machine;
``--quick`` (B = 1, 16; 3 repeats) is a smoke run of a few seconds.

Run from the repository root (needs the ``robots`` and ``test`` extras)::

    python benchmarks/dynamics.py --json out.json
    python benchmarks/dynamics.py --quick
    python benchmarks/dynamics.py --scenes talos_feet --algorithms aba,lcaba,proxbbo,proxltl --batches 1,64
    python benchmarks/dynamics.py --backend numpy     # the reference path

The first lines of the output name the code measured (``git describe``, "+dirty" when the working
tree has uncommitted changes) and the backend.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mechanics  # noqa: E402
from mechanics.pinocchio_io import example_robot_data_dir, from_pinocchio  # noqa: E402
from mechanics.sdf import load_sdf  # noqa: E402
from tests.mechanics.pinocchio_oracle import hands_and_cube, pinocchio_model_of, scenario, std_vectors  # noqa: E402

SCENES = ["talos_feet", "solo12_feet", "cassie", "allegro_cube", "two_hands_cube"]
NOT_BUILT = {
    "two_digits_box": "000 Table II's two Digits + box: no Digit model in example-robot-data 6.0, and the "
                      "repository's planar digit_leg() has 2-row loop constraints Pinocchio cannot state",
}
ALGORITHMS = ["aba", "lcaba", "proxbbo"]
PIN_OF = {"aba": "aba", "lcaba": "lcaba"}  # every other algorithm: constraintDynamics
BATCHES = [1, 64, 1024, 4096]
QUICK_BATCHES = [1, 16]
MU, TOL, MAX_ITER = 1e6, 1e-10, 50
LARGE = 64  # batches above this: --repeat-large repeats, warmed up on LARGE states only
SMALL = 10  # Pinocchio runs a batch smaller than this SMALL times over per repeat (median per state)
SINGLE_STATES = 8  # distinct states of the single and prepared rows (fewer than SMALL: each run SMALL times)
CASSIE = "cassie_description/robots/cassie_v2.sdf"


# -- scenes ---------------------------------------------------------------------------------------
@dataclass
class Scene:
    name: str
    model: object  # pinocchio.Model
    cms: list  # RigidConstraintModel
    mech: object  # mechanics.Mechanism
    sample: object  # (B, rng) -> (Q, V, T), each (B, n)

    @property
    def description(self) -> str:
        kinds = {}
        for cm in self.cms:
            kind = "CONTACT_6D" if cm.type == pin.ContactType.CONTACT_6D else "CONTACT_3D"
            kinds[kind] = kinds.get(kind, 0) + 1
        contacts = ", ".join(f"{n} {k}" for k, n in kinds.items())
        return (f"{self.name}: {len(self.mech.links)} links, nq {self.model.nq}, nv {self.mech.nv}, "
                f"m {self.mech.constraint_dim} ({contacts})")


def _pinocchio_sampler(model):
    """Random states: ``pin.randomConfiguration`` (free-flyer position in [-1, 1]), v, tau ~ N(0, 1)."""
    limited = model.copy()
    if limited.joints[1].shortname() == "JointModelFreeFlyer":
        limited.lowerPositionLimit[:3] = -1.0
        limited.upperPositionLimit[:3] = 1.0

    def sample(B: int, rng):
        pin.seed(int(rng.integers(2**31)))  # pin.randomConfiguration draws from Pinocchio's own generator
        Q = np.stack([pin.randomConfiguration(limited) for _ in range(B)])
        return Q, rng.normal(size=(B, model.nv)), rng.normal(size=(B, model.nv))

    return sample


def _cassie_sampler(mech):
    q0 = mech.neutral_configuration()  # the file's pose: every loop closed

    def sample(B: int, rng):
        Q = np.repeat(q0[None], B, axis=0)
        Q[:, :3] = rng.uniform(-1.0, 1.0, size=(B, 3))
        quat = rng.normal(size=(B, 4))
        Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)  # (x, y, z, w) as Pinocchio
        Q[:, 7:] += rng.normal(scale=0.1, size=(B, q0.size - 7))
        return Q, rng.normal(size=(B, mech.nv)), rng.normal(size=(B, mech.nv))

    return sample


def build_scene(name: str, rng) -> Scene:
    if name in ("talos_feet", "solo12_feet"):
        model, cms, _ = scenario(name, rng=rng)
        return Scene(name, model, list(cms), from_pinocchio(model, cms), _pinocchio_sampler(model))
    if name in ("allegro_cube", "two_hands_cube"):
        model, cms, _ = hands_and_cube(1 if name == "allegro_cube" else 2, rng)
        return Scene(name, model, list(cms), from_pinocchio(model, cms), _pinocchio_sampler(model))
    if name == "cassie":
        mech = load_sdf(example_robot_data_dir() / CASSIE)
        model, cms = pinocchio_model_of(mech)
        return Scene(name, model, list(cms), mech, _cassie_sampler(mech))
    if name in NOT_BUILT:
        raise ValueError(f"scene {name!r} is not built: {NOT_BUILT[name]}")
    raise ValueError(f"unknown scene {name!r}; choose from {SCENES}")


# -- the two sides --------------------------------------------------------------------------------
class PinocchioCall:
    """One Pinocchio algorithm with its data prepared once; each call times itself."""

    def __init__(self, scene: Scene, kind: str):
        self.kind, self.model = kind, scene.model
        self.data = self.model.createData()
        self.models, self.datas = std_vectors(scene.cms)
        self.settings = pin.ProximalSettings(TOL, 1.0 / MU, MAX_ITER)
        if kind == "constraintDynamics":
            pin.initConstraintDynamics(self.model, self.data, self.models, self.datas)
        elif kind == "lcaba":
            pin.computeJointMinimalOrdering(self.model, self.data, self.models)
        self.zero = pin.Motion.Zero()

    @property
    def name(self) -> str:
        return f"pin.{self.kind}"

    def __call__(self, q, v, tau):
        """(qdd, iterations, seconds) of one call."""
        model, data = self.model, self.data
        if self.kind == "aba":
            start = time.perf_counter()
            qdd = pin.aba(model, data, q, v, tau)
            elapsed = time.perf_counter() - start
            return np.array(qdd), -1, elapsed  # no iterations
        if self.kind == "lcaba":
            for i in range(model.njoints):  # Pinocchio 4.1's lcaba reads data.oa stale (6-D contacts)
                data.oa[i] = self.zero
            start = time.perf_counter()
            qdd = pin.lcaba(model, data, q, v, tau, self.models, self.datas, self.settings)
        else:
            start = time.perf_counter()
            qdd = pin.constraintDynamics(model, data, q, v, tau, self.models, self.datas, self.settings)
        elapsed = time.perf_counter() - start
        return np.array(qdd), int(self.settings.iter), elapsed

    def run(self, Q, V, T):
        """All states in a Python loop: (qdd (B, nv), iterations (B,), seconds per state, seconds of the
        first call, each state's seconds (B,)).

        One call first brings Pinocchio's code and data back into the caches (our call before it
        evicts them): not counted in the seconds per state, its own time returned apart (a cold
        call, for a single state).  The seconds are the sum of per-call times / B; a batch of fewer
        than ``SMALL`` states is run ``SMALL`` times over, its states in turn, and each state's
        median time is its time.
        """
        first = self(Q[0], V[0], T[0])[2]
        rounds = SMALL if len(Q) < SMALL else 1
        times = np.empty((rounds, len(Q)))
        for r in range(rounds):
            out = [self(q, v, tau) for q, v, tau in zip(Q, V, T)]
            times[r] = [o[2] for o in out]
        qdd, iterations = np.stack([o[0] for o in out]), np.array([o[1] for o in out])
        each = np.median(times, axis=0)
        return qdd, iterations, float(np.sum(each)) / len(Q), first, each


OPTIONS = {}  # extra keyword arguments of forward_dynamics (--backend)


def ours(mech, algorithm: str, q, v, tau, prepared=None):
    """(result, seconds) of one ``forward_dynamics`` call, or of one call of ``prepared``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mechanics.ConvergenceWarning)
        start = time.perf_counter()
        if prepared is not None:
            result = prepared(q, v, tau)
        else:
            result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=MU, tol=TOL, max_iter=MAX_ITER,
                                                **OPTIONS)
        elapsed = time.perf_counter() - start
    return result, elapsed


def prepared_call(mech, algorithm: str):
    """``mechanics.prepare`` with the benchmark's settings (validated and planned once)."""
    return mechanics.prepare(mech, algorithm, mu=MU, tol=TOL, max_iter=MAX_ITER, **OPTIONS)


# -- measuring ------------------------------------------------------------------------------------
def _span(values) -> str:
    values = np.atleast_1d(values)
    if np.all(values < 0):
        return "-"
    lo, hi = int(np.min(values)), int(np.max(values))
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def deviation(qdd, reference) -> float:
    qdd, reference = np.atleast_2d(qdd), np.atleast_2d(reference)
    scale = np.maximum(1.0, np.max(np.abs(reference), axis=1))
    return float(np.max(np.max(np.abs(qdd - reference), axis=1) / scale))


def measure_mode(scene: Scene, mech, algorithm: str, pin_call: PinocchioCall, B, repeat: int, rng) -> dict:
    """One row: ``B is None`` is the single (unbatched) ``forward_dynamics`` call, ``B == "prepared"`` one
    unbatched call of a prepared call (:func:`mechanics.prepare`), else one batched call over B states."""
    if B is None or B == "prepared":
        return measure_single(scene, mech, algorithm, pin_call, B == "prepared", repeat, rng)
    Q, V, T = scene.sample(B, rng)
    if B <= LARGE:  # warm-up
        ours(mech, algorithm, Q, V, T)
        pin_call.run(Q, V, T)
    else:  # the batch kernel loaded from numba's cache and its lanes' workspace made, on LARGE states: a run
        ours(mech, algorithm, Q[:LARGE], V[:LARGE], T[:LARGE])  # of large batches alone read 4.5x Pinocchio
        # at its first B = 1024 (two repeats, the first one 0.2 s longer), 0.90-0.93 after a smaller batch
    ours_times, warm_times, pin_times, pin_cold_times = [], [], [], []
    for _ in range(repeat):  # interleaved
        result, elapsed = ours(mech, algorithm, Q, V, T)
        ours_times.append(elapsed / B)
        if B < SMALL:  # then as Pinocchio's side: the median of SMALL calls after that one
            warm_times.append(np.median([ours(mech, algorithm, Q, V, T)[1] for _ in range(SMALL)]) / B)
        pin_qdd, pin_iterations, pin_per_state, pin_first, _ = pin_call.run(Q, V, T)
        pin_times.append(pin_per_state)
        if B < SMALL:  # Pinocchio's first call, right after ours: as cold as our first
            pin_cold_times.append(pin_first)
    ours_s, pin_s = np.median(ours_times), np.median(pin_times)
    ratios = {"ratio": ours_s / pin_s,
              "ratio_warm": np.median(warm_times) / pin_s if warm_times else None,
              "ratio_cold": ours_s / np.median(pin_cold_times) if pin_cold_times else None}
    return _row("batch", B, repeat, ours_times, warm_times, pin_times, ratios, result.iterations, result.converged,
                result.qdd, pin_qdd, pin_iterations)


def measure_single(scene: Scene, mech, algorithm: str, pin_call: PinocchioCall, prepared: bool, repeat: int,
                   rng) -> dict:
    """One row of unbatched calls over ``SINGLE_STATES`` distinct states (one state's iterations would make
    the row that state's): each repeat, the states turned by one, so that each is in turn the first.

    * ours cold: one call on the first state right after Pinocchio's calls (``ratio``: against Pinocchio's
      warm median on that state; ``cold``: against Pinocchio's first call, on the same state, right
      after ours);
    * ours warm: as Pinocchio's side -- ``SMALL`` rounds over the states, each state's median, their mean.
    """
    call = prepared_call(mech, algorithm) if prepared else None
    Q, V, T = scene.sample(SINGLE_STATES, rng)
    ours(mech, algorithm, Q[0], V[0], T[0], prepared=call)  # warm-up
    pin_call.run(Q, V, T)
    ours_times, warm_times, pin_times, first_ratios, cold_ratios = [], [], [], [], []
    for r in range(repeat):  # interleaved
        turn = np.roll(np.arange(SINGLE_STATES), -r)
        Qr, Vr, Tr = Q[turn], V[turn], T[turn]
        first = ours(mech, algorithm, Qr[0], Vr[0], Tr[0], prepared=call)[1]
        rounds = np.empty((SMALL, SINGLE_STATES))
        for k in range(SMALL):
            results = [ours(mech, algorithm, q, v, tau, prepared=call) for q, v, tau in zip(Qr, Vr, Tr)]
            rounds[k] = [elapsed for _, elapsed in results]
        warm_times.append(float(np.mean(np.median(rounds, axis=0))))
        pin_qdd, pin_iterations, pin_per_state, pin_first, pin_each = pin_call.run(Qr, Vr, Tr)
        ours_times.append(first)
        pin_times.append(pin_per_state)
        first_ratios.append(first / pin_each[0])  # the same state's: Pinocchio's warm median, its first call
        cold_ratios.append(first / pin_first)
    iterations = np.array([result.iterations for result, _ in results])
    converged = np.array([result.converged for result, _ in results])
    qdd = np.stack([result.qdd for result, _ in results])
    ratios = {"ratio": np.median(first_ratios), "ratio_warm": np.median(warm_times) / np.median(pin_times),
              "ratio_cold": np.median(cold_ratios)}
    return _row("prep" if prepared else "single", SINGLE_STATES, repeat, ours_times, warm_times, pin_times, ratios,
                iterations, converged, qdd, pin_qdd, pin_iterations)


def _row(mode: str, n: int, repeat: int, ours_times, warm_times, pin_times, ratios: dict, iterations, converged,
         qdd, pin_qdd, pin_iterations) -> dict:
    """A row of the table: medians over the repeats of the per-state times, ``ratios`` as measured."""
    return {
        "mode": mode, "B": n, "repeat": repeat,
        "ours_s_per_state": float(np.median(ours_times)), "pin_s_per_state": float(np.median(pin_times)),
        "ours_warm_s_per_state": float(np.median(warm_times)) if warm_times else None,
        **{name: None if value is None else float(value) for name, value in ratios.items()},
        "ours_iterations_span": _span(iterations), "pin_iterations_span": _span(pin_iterations),
        "ours_converged": bool(np.all(converged)),
        "pin_at_max_iter": int(np.sum(pin_iterations >= MAX_ITER)),
        "qdd_deviation": deviation(qdd, pin_qdd),
    }


def peak_rss(scene: str, algorithm: str, B: int, seed: int) -> dict:
    """Peak RSS of a fresh process that builds the scene and B states, then makes one call."""
    command = [sys.executable, str(Path(__file__).resolve()), "--rss-child", f"{scene}:{algorithm}:{B}", "--seed", str(seed)]
    if "backend" in OPTIONS:
        command += ["--backend", OPTIONS["backend"]]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _high_water_mb() -> float:
    """Peak RSS of this process in MB.

    Linux keeps ``getrusage().ru_maxrss`` across ``fork`` + ``exec``: a child started by a process
    that once held 600 MB reports at least 600 MB.  ``VmHWM`` in ``/proc/self/status`` belongs to the
    process's own address space, so it is read where it exists; ``ru_maxrss`` elsewhere.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def rss_child(spec: str, seed: int) -> None:
    name, algorithm, B = spec.split(":")
    rng = np.random.default_rng(seed)
    scene = build_scene(name, rng)
    mech = scene.mech.without_constraints() if algorithm == "aba" else scene.mech
    Q, V, T = scene.sample(int(B), rng)
    before = _high_water_mb()
    _, elapsed = ours(mech, algorithm, Q, V, T)
    after = _high_water_mb()
    print(json.dumps({"B": int(B), "before_mb": before, "peak_mb": after, "call_s": elapsed}))


def measure_scene(name: str, algorithms: list, batches: list, repeat: int, repeat_large: int, seed: int, rss: bool) -> dict:
    rng = np.random.default_rng(seed)
    scene = build_scene(name, rng)
    print(f"\n== {scene.description} ==")
    print(HEADER, flush=True)
    out = {"scene": name, "description": scene.description, "nv": scene.mech.nv, "nq": scene.model.nq,
           "m": scene.mech.constraint_dim, "rows": [], "rss": {}}
    for algorithm in algorithms:
        kind = PIN_OF.get(algorithm, "constraintDynamics")
        mech = scene.mech.without_constraints() if algorithm == "aba" else scene.mech
        pin_call = PinocchioCall(scene, kind)
        for B in [None, "prepared", *batches]:
            reps = repeat if B is None or B == "prepared" or B <= LARGE else repeat_large
            try:
                row = measure_mode(scene, mech, algorithm, pin_call, B, reps, rng)
            except Exception as error:  # e.g. pv on redundant contacts: SingularProblemError
                row = {"mode": "single" if B is None else "prep" if B == "prepared" else "batch",
                       "B": 1 if B in (None, "prepared") else B,
                       "error": f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"}
            out["rows"].append({"algorithm": algorithm, "pinocchio": pin_call.name, **row})
            print_row(out["rows"][-1], flush=True)
            if "error" in row:
                break
        if rss and batches and "error" not in out["rows"][-1]:
            out["rss"][algorithm] = peak_rss(name, algorithm, max(batches), seed)
            print_rss(algorithm, out["rss"][algorithm])
    return out


# -- printing -------------------------------------------------------------------------------------
HEADER = (f"{'algorithm':<10}{'pinocchio':<24}{'mode':<7}{'B':>6}{'reps':>5}{'ours ms/state':>15}{'pin ms/state':>14}"
          f"{'ratio':>9}{'cold':>7}{'warm':>7}{'iter ours':>11}{'iter pin':>10}{'qdd dev':>10}")


def _ratio(r: float) -> str:
    return f"{r:.0f}" if r >= 100 else f"{r:.1f}" if r >= 10 else f"{r:.2f}"


def print_row(row: dict, flush: bool = False) -> None:
    head = f"{row['algorithm']:<10}{row['pinocchio']:<24}{row['mode']:<7}{row['B']:>6}"
    if "error" in row:
        print(f"{head}     {row['error']}", flush=flush)
        return
    note = "" if row["ours_converged"] else "  ours not converged"
    if row["pin_at_max_iter"]:
        note += f"  pin at max_iter in {row['pin_at_max_iter']} of {row['B']}"
    print(f"{head}{row['repeat']:>5}{row['ours_s_per_state'] * 1e3:>15.4g}{row['pin_s_per_state'] * 1e3:>14.4g}"
          f"{_ratio(row['ratio']):>9}{_ratio(row['ratio_cold']) if row['ratio_cold'] else '-':>7}"
          f"{_ratio(row['ratio_warm']) if row['ratio_warm'] else '-':>7}"
          f"{row['ours_iterations_span']:>11}{row['pin_iterations_span']:>10}"
          f"{row['qdd_deviation']:>10.1e}{note}", flush=flush)


def print_rss(algorithm: str, rss: dict) -> None:
    if "error" in rss:
        print(f"  peak RSS, {algorithm}: not measured ({rss['error']})", flush=True)
    else:
        print(f"  peak RSS, {algorithm} at B = {rss['B']}: {rss['peak_mb']:.0f} MB "
              f"(process before the call: {rss['before_mb']:.0f} MB; the call took {rss['call_s']:.1f} s)", flush=True)


def _revision() -> str:
    """``git describe`` of the code measured ("+dirty" with uncommitted changes), or "unknown"."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty=+dirty"], capture_output=True, text=True, cwd=ROOT)
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default=",".join(SCENES), help=f"comma list of {SCENES}")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help=f"comma list of {list(mechanics.ALGORITHMS)} (aba: the tree against pin.aba)")
    parser.add_argument("--batches", default=None, help=f"comma list of batch sizes (default {BATCHES})")
    parser.add_argument("--repeat", type=int, default=None, help="repeats for single calls and B <= 64 (default 11)")
    parser.add_argument("--repeat-large", type=int, default=3, help="repeats for B > 64 (default 3)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: B = {QUICK_BATCHES}, 3 repeats")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--backend", help="forward_dynamics(backend=...) where the library has one (default: its own)")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.backend:
        OPTIONS["backend"] = args.backend
    if args.rss_child:
        rss_child(args.rss_child, args.seed)
        return
    batches = ([int(b) for b in args.batches.split(",")] if args.batches
               else QUICK_BATCHES if args.quick else BATCHES)
    repeat = args.repeat or (3 if args.quick else 11)
    algorithms = args.algorithms.split(",")
    for algorithm in algorithms:
        mechanics.resolve_algorithm(algorithm)  # refuse a misspelling before minutes of work
    print(f"gaussgraph at {_revision()}; backend {args.backend or 'default'}")
    print(f"mu {MU:g} (Pinocchio {1 / MU:g}), tol {TOL:g}, max_iter {MAX_ITER}; OPENBLAS_NUM_THREADS=1; "
          f"repeats {repeat} (single, B <= {LARGE}), {args.repeat_large} (B > {LARGE}); medians")
    for name, why in NOT_BUILT.items():
        print(f"not built: {name}: {why}")
    started = time.perf_counter()
    scenes = []
    for name in args.scenes.split(","):
        scene_start = time.perf_counter()
        scenes.append(measure_scene(name, algorithms, batches, repeat, args.repeat_large, args.seed, not args.no_rss))
        scenes[-1]["wall_s"] = time.perf_counter() - scene_start
    total = time.perf_counter() - started
    print()
    print("ratio: our per-state median / Pinocchio's; batch mode: Pinocchio runs a Python loop over the B states and its")
    print("per-state time is the sum of per-call times / B (loop and data.oa reset not counted); ours is one call / B.")
    print(f"single, prep: {SINGLE_STATES} distinct states; ratio: our first call (caches cold) / Pinocchio's warm median, same state.")
    print("warm (single, prep, B = 1): ours timed as Pinocchio's side, each state's median of 10 calls (single, prep: their mean).")
    print("cold (single, prep, B = 1): our first call / Pinocchio's first call on the same state, each right after the other side's calls.")
    print("iterations: ours = factorizations + re-solves; Pinocchio = ProximalSettings.iter (a-b: range over states).")
    print("qdd dev: max over states of max|qdd_ours - qdd_pin| / max(1, max|qdd_pin|).")
    print(f"total {total:.0f} s")
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "dynamics", "machine": platform.platform(), "loadavg_end": os.getloadavg(), "processor": platform.processor(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "pinocchio": pin.__version__, "revision": _revision(), "backend": args.backend, "threads": {v: os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
            "settings": {"mu": MU, "mu_pinocchio": 1 / MU, "tol": TOL, "max_iter": MAX_ITER, "repeat": repeat,
                         "repeat_large": args.repeat_large, "batches": batches, "seed": args.seed},
            "not_built": NOT_BUILT, "scenes": scenes, "total_s": total,
        }, indent=1))


if __name__ == "__main__":
    main()
