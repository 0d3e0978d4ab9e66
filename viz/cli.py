"""The ``gaussgraph`` command line: compare elimination orderings on mechanisms.

    gaussgraph                                  compare all algorithms on the 000 Fig. 4 mechanism
    gaussgraph compare chain_of_loops:loops=20 --algorithms lcaba,proxbbo --json out.json
    gaussgraph list
    gaussgraph render fig4 --algorithm lcaba --out pictures/
    gaussgraph scale cycle --sizes 8,16,32,64 --plot cycle.png

Long commands show their progress on stderr (building, then planning / solving
/ timing each algorithm, drawing each picture) when stderr is a terminal and
``--quiet`` is not given; stdout carries only the results.  Ctrl-C ends any
command with one line, ``gaussgraph: interrupted``, and exit status 130.  The
library is imported inside :func:`main`, so that this holds while it loads too.
"""
from __future__ import annotations

import argparse
import difflib
import importlib.util
import inspect
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import warnings
from pathlib import Path

from factorgraph import __version__

DEFAULT_MECHANISM = "fig4"
FILE_LOADERS = {".urdf": "load_urdf", ".sdf": "load_sdf", ".xml": "load_mjcf", ".mjcf": "load_mjcf"}


class UsageError(Exception):
    """Bad input on the command line: printed in one line, exit status 2."""


def _parameter(text: str):
    """A built-in's parameter value: an int, a float, or ``true`` / ``false`` (``mini_cheetah:contacts=true``)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise UsageError(f"parameter value {text!r} is not a number, true or false")


def load_mechanism(spec: str, floating_base: bool = False, contacts=()):
    """A built-in (``name`` or ``name:key=value,...``), an example-robot-data robot by name, or a URDF / SDF /
    MJCF file; ``contacts`` (``FRAME[:point|:weld]`` texts) fix frames of it to the ground."""
    mech = _mechanism(spec, floating_base)
    return mech.with_constraints(list(mech.constraints) + [_contact(text, mech) for text in contacts]) if contacts else mech


CONTACT_KINDS = ("point", "weld")


def _contact(text: str, mech):
    """``FRAME[:point|:weld]`` -> a Connect (point, the default) or Weld of the frame (or link) to the ground.

    A frame's name may hold a colon itself: the text after the last one is a
    kind only where the text before it names a frame or link of ``mech``.
    """
    from mechanics import GROUND, Connect, Weld

    frame, colon, kind = text.rpartition(":")
    # a whole name unless KIND is a kind, or FRAME alone names a frame (then KIND is refused as a kind)
    if not colon or (kind not in CONTACT_KINDS and (_known(text, mech) or not _known(frame, mech))):
        frame, kind = text, "point"
    if not frame:
        raise UsageError(f"--contact {text!r}: give a frame or link name, e.g. --contact left_sole_link:weld")
    if kind not in CONTACT_KINDS:
        raise UsageError(f"--contact {text!r}: unknown contact kind {kind!r} ({' | '.join(CONTACT_KINDS)})")
    if not _known(frame, mech):
        close = difflib.get_close_matches(frame, [*mech.frames, *mech.index], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"--contact {text!r}: {mech.name!r} has no frame or link {frame!r}{hint} "
                         f"({len(mech.frames)} frames, {len(mech.index)} links)")
    return (Weld if kind == "weld" else Connect)(frame, GROUND, name=f"{frame}:{kind}")


def _known(frame: str, mech) -> bool:
    return frame in mech.frames or frame in mech.index


def _mechanism(spec: str, floating_base: bool):
    import mechanics
    from mechanics.models import MODELS

    suffix = Path(spec).suffix.lower()
    if suffix in FILE_LOADERS:
        if not Path(spec).is_file():
            raise UsageError(f"no such file: {spec}")
        loader = getattr(mechanics, FILE_LOADERS[suffix])
        return loader(spec, floating_base=floating_base) if suffix == ".urdf" else loader(spec)
    name, _, params = spec.partition(":")
    if name not in MODELS and not params and name in _robot_names():
        return mechanics.load_robot(name)
    if name not in MODELS:
        raise UsageError(
            f"unknown mechanism {name!r}; built-ins: {', '.join(sorted(MODELS))}; robots (the robots extra): "
            f"{', '.join(_robot_names()) or 'none installed'}; or a .urdf/.sdf/.xml file"
        )
    kwargs = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"size parameter {item!r} should read key=value, e.g. {name}:{_first_param(name)}=4")
        kwargs[key.strip()] = _parameter(value.strip())
    accepted = inspect.signature(MODELS[name]).parameters
    unknown = [k for k in kwargs if k not in accepted]
    if unknown:
        raise UsageError(f"{name} has no parameter {unknown[0]!r}; its parameters: {', '.join(accepted) or 'none'}")
    return MODELS[name](**kwargs)


def _robot_names() -> list:
    """example-robot-data's robots that load by name, or none without the robots extra."""
    try:
        from mechanics.pinocchio_io import example_robot_data_dir, robot_names

        example_robot_data_dir()
    except (ImportError, FileNotFoundError):
        return []
    return robot_names()


def _first_param(name: str) -> str:
    from mechanics.models import MODELS

    return next(iter(inspect.signature(MODELS[name]).parameters), "size")


def _algorithms(text: str | None):
    import mechanics
    from mechanics import ALGORITHMS, POLICIES
    from mechanics.algorithms import ORDERING_POLICIES

    if text is None:
        return None
    names = [a.strip() for a in text.split(",") if a.strip()]
    for name in names:
        if "/" not in name and name.lower() not in ALGORITHMS:
            raise UsageError(
                f"unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}, or write POLICY/ORDERING "
                f"with a policy of {'/'.join(POLICIES)} and an ordering of {', '.join(ORDERING_POLICIES)}"
            )
        try:
            mechanics.resolve_algorithm(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return names


def _positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--repeat 0`` would time nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {value}")
    return value


def _output_file(path: str | None) -> None:
    """Refuse, before any work, an output file whose folder does not exist or cannot be written."""
    if path is None:
        return
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {path}: no folder {folder} (create it first)")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {path}: the folder {folder} is not writable")


def _needs_matplotlib(plot: str | None) -> None:
    if plot is None:
        return
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib: pip install matplotlib (or, in a checkout of gaussgraph, "
                         "pip install '.[plot]')")


def _writable(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".gaussgraph_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"cannot write to {path}: {error.strerror or error}") from None
    return path


class Interruption:
    """Ctrl-C as one line on stderr and exit status 130, also while the main thread sits in a long C call.

    Python raises ``KeyboardInterrupt`` only at the next bytecode, so a LAPACK
    solve or a compiled loop would keep Ctrl-C waiting for minutes.  The signal
    also wakes a watcher thread (``signal.set_wakeup_fd``); if the main thread
    has not said the line ``GRACE`` seconds later, the watcher says it and ends
    the process.  Whichever comes first speaks: the line is printed once.  A
    ``KeyboardInterrupt`` raised where Python cannot propagate it (inside a C
    callback, e.g. numba's compiler caching an object) would print "Exception
    ignored ..."; it is dropped instead and the watcher ends the process.
    """

    GRACE = 1.0
    LINE = "gaussgraph: interrupted"
    STATUS = 130

    def __init__(self):
        self._said, self._done = threading.Lock(), threading.Event()
        self._wakeup = None

    def say(self) -> int:
        """Print the line (once), return the exit status."""
        self._done.set()
        self._said.acquire()  # held for good: if the watcher holds it, it is ending the process
        print(self.LINE, file=sys.stderr)
        return self.STATUS

    def __enter__(self) -> "Interruption":
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may take the wakeup fd; KeyboardInterrupt still ends in one line
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._wakeup = writer
        self._unraisable, sys.unraisablehook = sys.unraisablehook, self._drop_interrupt
        threading.Thread(target=self._watch, args=(reader,), name="gaussgraph-interrupt", daemon=True).start()
        return self

    def _watch(self, reader: socket.socket) -> None:
        with reader:
            signals = b""
            while signal.SIGINT not in signals:
                try:
                    signals = reader.recv(64)
                except OSError:
                    return
                if not signals:  # __exit__ closed the other end
                    return
        if self._done.wait(self.GRACE) or not self._said.acquire(blocking=False):
            return  # the main thread said it, or finished
        sys.stderr.write(("\r\033[K" if sys.stderr.isatty() else "") + self.LINE + "\n")
        sys.stderr.flush()
        os._exit(self.STATUS)

    def _drop_interrupt(self, unraisable) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            self._unraisable(unraisable)

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._wakeup is not None:
            sys.unraisablehook = self._unraisable
            signal.set_wakeup_fd(self._previous)
            self._wakeup.close()
            self._wakeup = None


class Progress:
    """A long command's progress on stderr: one tqdm bar fed :class:`viz.compare.Step` events.

    It counts algorithms (times sizes, for ``scale``) or pictures, and says what
    runs now -- ``building chain_of_loops:loops=20``, ``planning proxltl``,
    ``n=16: solving lcaba``, ``drawing lcaba`` -- with the time spent, which
    ticks every second even while one plan takes minutes.  Disabled (every call
    does nothing) with ``--quiet`` or when stderr is not a terminal; cleared on
    exit, Ctrl-C included.  Warnings raised meanwhile print above the bar.
    """

    COUNTED = "{n_fmt}/{total_fmt} |{bar:20}| {elapsed} {desc}"
    UNCOUNTED = "{elapsed} {desc}"

    def __init__(self, enabled: bool, param: str | None = None, sizes: int = 1):
        self.bar, self.param, self.sizes, self.started = None, param, sizes, 0
        if not enabled:
            return
        from tqdm import tqdm

        self._tqdm = tqdm
        try:
            sized = os.get_terminal_size(sys.stderr.fileno()).columns > 0
        except (OSError, ValueError):
            sized = False
        width = {"dynamic_ncols": True} if sized else {"ncols": 80}  # a terminal of width 0 would show nothing
        self.bar = tqdm(total=None, file=sys.stderr, leave=False, bar_format=self.UNCOUNTED, **width)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="gaussgraph-progress", daemon=True)
        self._ticker.start()
        self._showwarning, warnings.showwarning = warnings.showwarning, self._warning

    @classmethod
    def of(cls, args, param: str | None = None, sizes: int = 1) -> "Progress":
        """On unless ``--quiet`` or stderr is not a terminal."""
        return cls(not args.quiet and sys.stderr.isatty(), param, sizes)

    def status(self, text: str) -> None:
        """Say what runs now."""
        if self.bar is not None:
            self.bar.set_description_str(text)

    def __call__(self, step) -> None:
        if self.bar is None:
            return
        where = f"{self.param}={step.size}: " if step.size is not None and self.param else ""
        if step.phase == "building":
            self.started += 1
            self.status(f"{where}building")
        elif step.phase == "reference":  # this size's algorithms, assumed for the sizes still to come
            self._count(self.bar.n + step.total * (self.sizes - max(self.started, 1) + 1), self.bar.n)
            self.status(f"{where}dense reference solve")
        elif step.phase == "done":
            self.bar.update(1)
        elif step.phase == "drawing":
            self._count(step.total, step.index)
            self.status(f"drawing {step.algorithm} ({step.index + 1} of {step.total})")
        else:
            self.status(f"{where}{step.phase} {step.algorithm}")

    def _count(self, total: int, n: int) -> None:
        with self._tqdm.get_lock():  # the ticker must not draw it half changed
            self.bar.bar_format, self.bar.total, self.bar.n = self.COUNTED, total, n
            self.bar.refresh()

    def write(self, text: str) -> None:
        """A line above the bar (the bar is redrawn below it); plain stderr when disabled."""
        if self.bar is None:
            print(text, file=sys.stderr)
        else:
            self._tqdm.write(text, file=sys.stderr)

    def _warning(self, message, category, filename, lineno, file=None, line=None) -> None:
        self.write(warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"))

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.bar.refresh()
            except Exception:  # a display glitch must never end the command
                pass

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self._stop.set()
            self._ticker.join()
            warnings.showwarning = self._showwarning
            self.bar.close()
            self.bar = None


class _Lines:
    """A stream whose complete lines go to :meth:`Progress.write` (for ``render``'s warnings)."""

    def __init__(self, progress: Progress):
        self.progress, self.pending = progress, ""

    def write(self, text: str) -> None:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.progress.write(line)

    def flush(self) -> None:
        pass


def run_compare(args) -> int:
    from . import compare as cmp
    from .dot import INSTALL_DOT, has_dot
    from .gallery import render_gallery

    for path in (args.json, args.csv):
        _output_file(path)
    with Progress.of(args) as progress:
        progress.status(f"building {args.mechanism}")
        mech = load_mechanism(args.mechanism, args.floating_base, args.contact)
        rows = cmp.compare(mech, _algorithms(args.algorithms), mu=args.mu, tol=args.tol, repeat=args.repeat,
                           on_step=progress)
    print(cmp.format_table(rows, f"{mech}  (mu={args.mu:g}, tol={args.tol:g})"))
    print("deviation: relative to the dense KKT solve; ms/solve: one forward_dynamics call, one trip into compiled code "
          "(kinematics, filling, factorization, outer iterations; plan cached); elim ms: one compiled factorization + "
          "solve")
    if args.json:
        cmp.write_json(rows, args.json, mechanism=repr(mech), mu=args.mu, tol=args.tol)
    if args.csv:
        cmp.write_csv(rows, args.csv)
    if args.render:
        out = _writable(Path(args.render))
        with Progress.of(args) as progress:
            for row in rows:
                if row.flops is not None:
                    render_gallery(mech, row.algorithm, out, mu=args.mu, warn=None, on_step=progress)
        print(f"pictures written to {out}" + ("" if has_dot() else f" ({INSTALL_DOT})"))
    return 0


def run_list(args) -> int:
    from mechanics import ALGORITHMS, POLICIES
    from mechanics.algorithms import ORDERING_POLICIES, PAPERS
    from mechanics.models import MODELS

    print("built-in mechanisms (name:parameter=value,...):")
    for name, make in MODELS.items():
        params = ", ".join(f"{p}={v.default}" for p, v in inspect.signature(make).parameters.items())
        print(f"  {name:<16} {_first_sentence(make.__doc__ or '')}" + (f"  [{params}]" if params else ""))
    print("algorithms (constraint policy, ordering policy):")
    for name, algo in ALGORITHMS.items():
        print(f"  {name:<16} {algo.policy_label:<5} {algo.description}")
    print("an algorithm of your own: POLICY/ORDERING, a policy of", "/".join(POLICIES),
          "and an ordering of", "/".join(ORDERING_POLICIES))
    print("papers (the codes above):")
    for code, paper in PAPERS.items():
        print(f"  {code}  {paper}")
    return 0


def _first_sentence(doc: str) -> str:
    """A docstring's first sentence on one line, its RST literals (````x````) as plain text."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    end = re.search(r"(?<!Fig)(?<!Figs)(?<!Sec)(?<!eq)(?<!eqs)(?<!e\.g)(?<!i\.e)\.(\s+[A-Z(]|$)", paragraph)
    return (paragraph[: end.start() + 1] if end else paragraph).replace("``", "")


def run_render(args) -> int:
    from .gallery import render_gallery

    with Progress.of(args) as progress:
        progress.status(f"building {args.mechanism}")
        mech = load_mechanism(args.mechanism, args.floating_base, args.contact)
        algorithms = _render_algorithms(args.algorithm, mech)
        _output_file(args.html)
        draw_frames = bool(args.out or not args.html)  # --html alone writes the page only; with --out, both
        out = _writable(Path(args.out or _folder_name(mech.name))) if draw_frames else None
        if args.html:
            _write_page(mech, algorithms, Path(args.html))
        if not draw_frames:
            return 0
        warn = _Lines(progress) if progress.bar is not None else sys.stderr
        written, drawn = [], set()
        for algorithm in algorithms:
            written += render_gallery(mech, algorithm, out, tuple(args.format.split(",")), mu=args.mu, warn=warn,
                                      on_step=progress, columns=args.columns, drawn=drawn)
            warn = None  # "install dot" once
    print(f"{len(written)} files written to {out} ({', '.join(algorithms)})")
    return 0


def _write_page(mech, algorithms: list, path: Path) -> None:
    """``render --html``: the interactive page of ``algorithms`` on ``mech`` (viz.page), one file."""
    from mechanics import algorithm_plan

    from .layout import mechanism_positions
    from .page import elimination_page
    from .views import cluster_fronts, link_group

    plans = {name: algorithm_plan(mech, name)[1] for name in algorithms}
    positions = mech.derived.get(("picture layout",), lambda: mechanism_positions(mech, link_group))
    fronts = {name: cluster_fronts(mech, plan) for name, plan in plans.items()}
    path.write_text(elimination_page(plans, f"{mech.name}: elimination step by step", positions, link_group,
                                     fronts=fronts))
    print(f"page written to {path} ({', '.join(algorithms)}); open it in a browser: no network needed")


def _render_algorithms(text: str | None, mech) -> list:
    """The algorithms ``--algorithm`` names (comma-separated, any case), or every one that applies to ``mech``."""
    from mechanics import ALGORITHMS

    from .compare import applicable

    if text is None:
        return [name for name, _ in applicable(mech)]
    names = [name.lower() for name in _algorithms(text)]
    for name in names:
        if name not in ALGORITHMS:  # a POLICY/ORDERING text: the pictures are drawn for named algorithms
            raise UsageError(f"render draws named algorithms; choose from {', '.join(ALGORITHMS)}")
        ALGORITHMS[name].check(mech, name)
    return names


def _folder_name(name: str) -> str:
    """A mechanism's name as a folder name (``chain_of_loops_8x7``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "pictures"


def run_scale(args) -> int:
    from mechanics.models import MODELS

    from . import compare as cmp

    name = args.mechanism.partition(":")[0]
    if name not in MODELS:
        raise UsageError(f"scale needs a built-in mechanism; choose from {', '.join(sorted(MODELS))}")
    param = args.param or _first_param(name)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--sizes must be integers separated by commas, got {args.sizes!r}") from None
    load_mechanism(f"{name}:{param}={sizes[0]}")  # validates the parameter before the sweep
    for path in (args.json, args.plot):
        _output_file(path)
    _needs_matplotlib(args.plot)
    with Progress.of(args, param, len(sizes)) as progress:
        points = cmp.scale(name, param, sizes, _algorithms(args.algorithms), mu=args.mu, repeat=args.repeat,
                           progress=None, on_step=progress)
    print(cmp.format_points(points))
    if args.json:
        Path(args.json).write_text(json.dumps(points, indent=1))
    if args.plot:
        cmp.plot_scaling(points, args.plot, f"{name} ({param})")
        print(f"plot written to {args.plot}")
    return 0


def run_warmup(args) -> int:
    import mechanics

    def said(what: str, seconds: float) -> None:
        print(f"  {what}: {seconds:.1f} s", flush=True)

    start = time.perf_counter()
    print("gaussgraph warmup: compiling the kernels that have no disk cache yet (loading the others)", flush=True)
    mechanics.warmup(on_stage=said)
    where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside each module of elimination and mechanics"
    print(f"done in {time.perf_counter() - start:.1f} s; cached in {where}.  Run this once after installing: a "
          f"new version compiles again (so does a reinstall of the same one with numba older than 0.68).")
    return 0


CONTACT_HELP = ("fix a frame (or link) of the robot to the ground: a point contact (default) or a weld; repeat it, "
                "e.g. --contact left_sole_link:weld --contact right_sole_link:weld")
QUIET = ("-q", "--quiet")
QUIET_OPTIONS = {"action": "store_true",
                 "help": "no progress on stderr (shown only when stderr is a terminal: building, planning, solving...)"}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="gaussgraph",
        description="Constrained dynamics as Gaussian factor graphs: compare elimination orderings (the papers' "
                    "algorithms) on a mechanism, draw their fill-in and cliques.",
        epilog="With no command, runs `gaussgraph compare` on the 000 Fig. 4 mechanism.  Long commands show their "
               "progress on stderr when it is a terminal (-q/--quiet: none); Ctrl-C stops any command (exit status 130).",
    )
    top.add_argument("--version", action="version", version=f"gaussgraph {__version__}")
    sub = top.add_subparsers(dest="command")
    mech_help = ("a built-in (see `gaussgraph list`), with sizes as name:key=value,... , a robot of example-robot-data "
                 "by name (talos, solo12, go1, ur5, cassie, ...), or a .urdf/.sdf/.xml file")

    c = sub.add_parser("compare", help="table of every algorithm on a mechanism (the main job)")
    c.add_argument("mechanism", nargs="?", default=DEFAULT_MECHANISM, help=mech_help + f" (default {DEFAULT_MECHANISM})")
    c.add_argument("--algorithms", help="comma-separated names or POLICY/ORDERING pairs, e.g. lcaba,prox/tree_min_degree (default: all that apply)")
    c.add_argument("--mu", type=float, default=1e6, help="penalty / proximal parameter, larger is stiffer (default 1e6)")
    c.add_argument("--tol", type=float, default=1e-10, help="outer-loop tolerance (default 1e-10)")
    c.add_argument("--repeat", type=_positive_int, default=5, help="timed solves per algorithm (default 5)")
    c.add_argument("--render", metavar="DIR", help="also draw every view into DIR")
    c.add_argument("--json", metavar="FILE", help="write the table as JSON")
    c.add_argument("--csv", metavar="FILE", help="write the table as CSV")
    c.add_argument("--floating-base", action="store_true", help="URDF files: add a free-flyer root joint")
    c.add_argument("--contact", action="append", default=[], metavar="FRAME[:point|:weld]", help=CONTACT_HELP)
    c.add_argument(*QUIET, **QUIET_OPTIONS)
    c.set_defaults(run=run_compare)

    lst = sub.add_parser("list", help="built-in mechanisms and algorithms")
    lst.set_defaults(run=run_list)

    r = sub.add_parser("render", help="draw the mechanism, its factor graph, the elimination frames and clique tree")
    r.add_argument("mechanism", help=mech_help)
    r.add_argument("--algorithm", help="whose elimination to draw, comma-separated (default: every algorithm that applies)")
    r.add_argument("--out", metavar="DIR", help="output folder (default: a folder named after the mechanism, here)")
    r.add_argument("--format", default="svg", help="comma-separated: svg, png (default svg)")
    r.add_argument("--mu", type=float, default=1e6,
                   help="penalty / proximal parameter, larger is stiffer (default 1e6); it sets the numbers, not the plan")
    r.add_argument("--floating-base", action="store_true", help="URDF files: add a free-flyer root joint")
    r.add_argument("--contact", action="append", default=[], metavar="FRAME[:point|:weld]", help=CONTACT_HELP)
    r.add_argument("--html", metavar="FILE", help="write one self-contained HTML page (instead of the pictures, or "
                   "beside them with --out): step through the elimination with a slider or the arrow keys, two "
                   "orderings side by side")
    r.add_argument("--columns", type=_positive_int, help="frames per row of the overview sheet (default: as many as "
                   "fit 4,000 px, at most 4)")
    r.add_argument(*QUIET, **QUIET_OPTIONS)
    r.set_defaults(run=run_render)

    s = sub.add_parser("scale", help="time and flops over a size sweep of a built-in mechanism")
    s.add_argument("mechanism", help="a built-in mechanism name")
    s.add_argument("--sizes", required=True, help="comma-separated sizes, e.g. 2,4,8,16")
    s.add_argument("--param", help="which size parameter to sweep (default: the first one)")
    s.add_argument("--algorithms", help="comma-separated names or POLICY/ORDERING pairs, e.g. lcaba,prox/tree_min_degree (default: all that apply)")
    s.add_argument("--mu", type=float, default=1e6, help="penalty / proximal parameter, larger is stiffer (default 1e6)")
    s.add_argument("--repeat", type=_positive_int, default=3, help="timed solves per algorithm and size (default 3)")
    s.add_argument("--plot", metavar="FILE", help="log-log plot (needs matplotlib: the `plot` extra)")
    s.add_argument("--json", metavar="FILE", help="write the points (size, algorithm, flops, seconds) as JSON")
    s.add_argument(*QUIET, **QUIET_OPTIONS)
    s.set_defaults(run=run_scale)

    w = sub.add_parser("warmup", help="compile every kernel ahead of time (after installing: containers, cluster "
                       "images); numba keeps them on disk, in __pycache__ beside the package or under NUMBA_CACHE_DIR")
    w.set_defaults(run=run_warmup)
    return top


COMMANDS = ("compare", "list", "render", "scale", "warmup")


def _unknown_command(word: str) -> str:
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"unknown command {word!r}{hint}; choose from {', '.join(COMMANDS)} -- e.g. `gaussgraph compare "
            f"{word}` to compare the algorithms on a mechanism of that name")


def main(argv: list[str] | None = None) -> int:
    """The ``gaussgraph`` command: 0 on success, 2 on bad input (one line), 130 on Ctrl-C (one line)."""
    with Interruption() as interruption:
        try:
            argv = list(sys.argv[1:] if argv is None else argv)
            top = parser()
            if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
                argv = ["compare"] + argv  # no command: compare (the main job), with the options given
            elif argv[0] not in COMMANDS and not argv[0].startswith("-"):
                raise UsageError(_unknown_command(argv[0]))
            args = top.parse_args(argv)
            return args.run(args)
        except BrokenPipeError:  # `gaussgraph compare | head`: the reader left; nothing more to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except (UsageError, ValueError, FileNotFoundError, ImportError) as error:
            print(f"gaussgraph: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return interruption.say()


if __name__ == "__main__":
    sys.exit(main())
