"""The ``gaussgraph`` command line: compare elimination orderings on mechanisms.

    gaussgraph                                  compare all algorithms on the 000 Fig. 4 mechanism
    gaussgraph compare chain_of_loops:loops=20 --algorithms lcaba,proxbbo --json out.json
    gaussgraph list
    gaussgraph render fig4 --algorithm lcaba --out pictures/
    gaussgraph scale cycle --sizes 8,16,32,64 --plot cycle.png
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

import mechanics
from mechanics import ALGORITHMS, POLICIES
from mechanics.algorithms import ORDERING_POLICIES
from mechanics.models import MODELS

from . import compare as cmp
from .dot import INSTALL_DOT, has_dot
from .gallery import render_gallery

DEFAULT_MECHANISM = "fig4"
FILE_LOADERS = {".urdf": "load_urdf", ".sdf": "load_sdf", ".xml": "load_mjcf", ".mjcf": "load_mjcf"}


class UsageError(Exception):
    """Bad input on the command line: printed in one line, exit status 2."""


def _number(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    raise UsageError(f"size parameter value {text!r} is not a number")


def load_mechanism(spec: str, floating_base: bool = False):
    """A built-in (``name`` or ``name:key=value,...``) or a URDF / SDF / MJCF file."""
    suffix = Path(spec).suffix.lower()
    if suffix in FILE_LOADERS:
        if not Path(spec).is_file():
            raise UsageError(f"no such file: {spec}")
        loader = getattr(mechanics, FILE_LOADERS[suffix])
        return loader(spec, floating_base=floating_base) if suffix == ".urdf" else loader(spec)
    name, _, params = spec.partition(":")
    if name not in MODELS:
        raise UsageError(
            f"unknown mechanism {name!r}; built-ins: {', '.join(sorted(MODELS))} (or a .urdf/.sdf/.xml file)"
        )
    kwargs = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"size parameter {item!r} should read key=value, e.g. {name}:{_first_param(name)}=4")
        kwargs[key.strip()] = _number(value.strip())
    accepted = inspect.signature(MODELS[name]).parameters
    unknown = [k for k in kwargs if k not in accepted]
    if unknown:
        raise UsageError(f"{name} has no parameter {unknown[0]!r}; its parameters: {', '.join(accepted) or 'none'}")
    return MODELS[name](**kwargs)


def _first_param(name: str) -> str:
    return next(iter(inspect.signature(MODELS[name]).parameters), "size")


def _algorithms(text: str | None):
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


def _writable(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".gaussgraph_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"cannot write to {path}: {error.strerror or error}") from None
    return path


def run_compare(args) -> int:
    mech = load_mechanism(args.mechanism, args.floating_base)
    rows = cmp.compare(mech, _algorithms(args.algorithms), mu=args.mu, tol=args.tol, repeat=args.repeat)
    print(cmp.format_table(rows, f"{mech}  (mu={args.mu:g}, tol={args.tol:g})"))
    print("deviation: relative to the dense KKT solve; times include kinematics and graph building (plan cached)")
    if args.json:
        cmp.write_json(rows, args.json, mechanism=repr(mech), mu=args.mu, tol=args.tol)
    if args.csv:
        cmp.write_csv(rows, args.csv)
    if args.render:
        out = _writable(Path(args.render))
        for row in rows:
            if row.flops is not None:
                render_gallery(mech, row.algorithm, out, mu=args.mu, warn=None)
        print(f"pictures written to {out}" + ("" if has_dot() else f" ({INSTALL_DOT})"))
    return 0


def run_list(args) -> int:
    print("built-in mechanisms (name:parameter=value,...):")
    for name, make in MODELS.items():
        params = ", ".join(f"{p}={v.default}" for p, v in inspect.signature(make).parameters.items())
        doc = (make.__doc__ or "").strip().splitlines()[0]
        print(f"  {name:<16} {doc}" + (f"  [{params}]" if params else ""))
    print("algorithms (constraint policy, ordering policy):")
    for name, algo in ALGORITHMS.items():
        print(f"  {name:<16} {algo.policy_label:<5} {algo.description}")
    print("an algorithm of your own: POLICY/ORDERING, a policy of", "/".join(POLICIES),
          "and an ordering of", "/".join(ORDERING_POLICIES))
    return 0


def run_render(args) -> int:
    mech = load_mechanism(args.mechanism, args.floating_base)
    if args.algorithm not in ALGORITHMS:
        raise UsageError(f"unknown algorithm {args.algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    ALGORITHMS[args.algorithm].check(mech, args.algorithm)
    out = _writable(Path(args.out))
    written = render_gallery(mech, args.algorithm, out, tuple(args.format.split(",")), mu=args.mu, warn=sys.stderr)
    print(f"{len(written)} files written to {out}")
    return 0


def run_scale(args) -> int:
    name = args.mechanism.partition(":")[0]
    if name not in MODELS:
        raise UsageError(f"scale needs a built-in mechanism; choose from {', '.join(sorted(MODELS))}")
    param = args.param or _first_param(name)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--sizes must be integers separated by commas, got {args.sizes!r}") from None
    load_mechanism(f"{name}:{param}={sizes[0]}")  # validates the parameter before the sweep
    points = cmp.scale(name, param, sizes, _algorithms(args.algorithms), mu=args.mu, repeat=args.repeat)
    print(f"{'size':>6} {'algorithm':<16}{'flops':>12}{'ms/solve':>10}")
    for p in points:
        ms = f"{p['seconds'] * 1e3:.2f}" if p["seconds"] is not None else "-"
        print(f"{p['size']:>6} {p['algorithm']:<16}{(p['flops'] or 0):>12.3g}{ms:>10}")
    if args.json:
        Path(args.json).write_text(json.dumps(points, indent=1))
    if args.plot:
        cmp.plot_scaling(points, args.plot, f"{name} ({param})")
        print(f"plot written to {args.plot}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="gaussgraph",
        description="Constrained dynamics as Gaussian factor graphs: compare elimination orderings (the papers' "
                    "algorithms) on a mechanism, draw their fill-in and cliques.",
        epilog="With no command, runs `gaussgraph compare` on the 000 Fig. 4 mechanism.",
    )
    sub = top.add_subparsers(dest="command")
    mech_help = "a built-in (see `gaussgraph list`), with sizes as name:key=value,... , or a .urdf/.sdf/.xml file"

    c = sub.add_parser("compare", help="table of every algorithm on a mechanism (the main job)")
    c.add_argument("mechanism", nargs="?", default=DEFAULT_MECHANISM, help=mech_help + f" (default {DEFAULT_MECHANISM})")
    c.add_argument("--algorithms", help="comma-separated names or POLICY/ORDERING pairs, e.g. lcaba,prox/tree_min_degree (default: all that apply)")
    c.add_argument("--mu", type=float, default=1e6, help="penalty / proximal parameter, larger is stiffer (default 1e6)")
    c.add_argument("--tol", type=float, default=1e-10, help="outer-loop tolerance (default 1e-10)")
    c.add_argument("--repeat", type=int, default=5, help="timed solves per algorithm (default 5)")
    c.add_argument("--render", metavar="DIR", help="also draw every view into DIR")
    c.add_argument("--json", metavar="FILE", help="write the table as JSON")
    c.add_argument("--csv", metavar="FILE", help="write the table as CSV")
    c.add_argument("--floating-base", action="store_true", help="URDF files: add a free-flyer root joint")
    c.set_defaults(run=run_compare)

    lst = sub.add_parser("list", help="built-in mechanisms and algorithms")
    lst.set_defaults(run=run_list)

    r = sub.add_parser("render", help="draw the mechanism, its factor graph, the elimination frames and clique tree")
    r.add_argument("mechanism", help=mech_help)
    r.add_argument("--algorithm", default="lcaba", help="whose elimination to draw (default lcaba)")
    r.add_argument("--out", required=True, metavar="DIR", help="output folder")
    r.add_argument("--format", default="svg", help="comma-separated: svg, png (default svg)")
    r.add_argument("--mu", type=float, default=1e6)
    r.add_argument("--floating-base", action="store_true")
    r.set_defaults(run=run_render)

    s = sub.add_parser("scale", help="time and flops over a size sweep of a built-in mechanism")
    s.add_argument("mechanism", help="a built-in mechanism name")
    s.add_argument("--sizes", required=True, help="comma-separated sizes, e.g. 2,4,8,16")
    s.add_argument("--param", help="which size parameter to sweep (default: the first one)")
    s.add_argument("--algorithms", help="comma-separated names or POLICY/ORDERING pairs, e.g. lcaba,prox/tree_min_degree (default: all that apply)")
    s.add_argument("--mu", type=float, default=1e6)
    s.add_argument("--repeat", type=int, default=3)
    s.add_argument("--plot", metavar="FILE", help="log-log plot (needs matplotlib: the `plot` extra)")
    s.add_argument("--json", metavar="FILE")
    s.set_defaults(run=run_scale)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    top = parser()
    args = top.parse_args(argv if argv and argv[0] in ("compare", "list", "render", "scale", "-h", "--help")
                          else ["compare"] + list(argv))
    try:
        return args.run(args)
    except (UsageError, ValueError, FileNotFoundError, ImportError) as error:
        print(f"gaussgraph: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
