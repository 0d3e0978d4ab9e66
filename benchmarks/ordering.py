"""Time of the elimination orderings (issue 10): ours against networkx and GTSAM, and their fill.

The graph is the engine benchmark's loops graph (``benchmarks/engine.py``): ``loops`` loops of 7
six-dimensional variables, a prior on each, between-factors around each loop and one chaining
loop ``l`` (position 3) to loop ``l + 1`` (position 0).  ``loops = 200`` is engine.py's
1400-variable graph (when engine.py is importable, its ``structure()`` is checked against the
builder here); the sizes run 350 .. 5600 variables.

Measured per size (median over ``--repeat`` calls, wall clock and process CPU time, both since
other work on a shared machine inflates the wall clock; ``OPENBLAS_NUM_THREADS=1``):

* ours: ``elimination.natural``, ``min_degree``, ``min_fill`` on the graph's structure (a
  ``GraphStructure``, as ``analyze`` receives it), and the library orderings ``elimination.amd``
  (SuiteSparse AMD) and ``elimination.metis`` (METIS nested dissection) on the same;
* networkx: ``approximation.treewidth_min_degree`` / ``treewidth_min_fill_in`` on the interaction
  graph (they return a tree decomposition; the elimination order for the fill column is recorded
  in a separate, untimed run of the same heuristic);
* GTSAM: ``Ordering.ColamdSymbolicFactorGraph`` on the same factor structure (COLAMD, as
  ``ColamdGaussianFactorGraph`` computes it, without numbers), and ``MetisSymbolicFactorGraph``
  (GTSAM's METIS, for reference; left out where this GTSAM lacks it);
* with ``--baseline REV``: our orderings as they were at git revision ``REV`` (e.g. the commit
  before issue 10), loaded from ``git show`` beside today's, up to ``--baseline-max`` variables.

Fill: the edges the order adds to the interaction graph, and ``nnz(L)``, the scalar entries of
the Cholesky factor (dimension 6 per variable); per size, the fill of amd, metis and GTSAM's METIS
over GTSAM COLAMD's (issue 10's target: amd and metis <= 1.1x).  Growth: the least-squares slope
of log(time) against log(variables) over the sizes.

Mechanics (:mod:`mechanics.models` ``chain_of_loops``): LCABA's tree-constrained minimum degree
(``mechanics.algorithms.tree_min_degree``, ``alm`` graph) on a 1000-link chain of loops
(``loops=111, links_per_loop=10``); the joint-space ``min_degree`` / ``min_fill`` orderings and
LCABA's on ``chain_of_loops(loops=20, links_per_loop=7)`` (``prox`` graph, 262 variables); and
proxLTL's plan as the chain grows: ``links_per_loop=7`` and 20, 42, 83, 166 loops (121, 253, 499,
997 links; the first is the small chain).  Per size, in a child process stopped after
``--plan-timeout`` seconds (larger sizes are then skipped), on a fresh mechanism per run (so no
plan comes from ``mechanism.plans``): the wall and CPU time of the ordering
(``mechanics.algorithms.joint_space``) and of ``elimination.analyze``, separately, after a
warm-up on a one-loop chain; the median over ``--repeat`` runs, fewer once the runs so far took
``PLAN_REPEAT_BUDGET`` seconds.  Growth: the slope of log(time) against log(links).  Issue 10's
targets: <= 0.5 s at 20 loops x 7, <= 2 s at 1000 links, growth <= links^1.2.

Run from the repository root (needs the ``test`` extra for GTSAM)::

    python benchmarks/ordering.py --json ordering.json
    python benchmarks/ordering.py --baseline 7b29120 --repeat 3     # before / after issue 10
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from networkx.algorithms.approximation import treewidth as nx_treewidth  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import elimination  # noqa: E402
import mechanics  # noqa: E402
from factorgraph import GraphStructure, Variable  # noqa: E402
from factorgraph.factors import FactorStructure  # noqa: E402
from mechanics import models  # noqa: E402
from mechanics.algorithms import Algorithm, layout_of  # noqa: E402

PER_LOOP, DIM = 7, 6
LOOPS = (50, 100, 200, 400, 800)  # 350 .. 5600 variables
LCABA_CHAIN = {"loops": 111, "links_per_loop": 10}  # 1 + 111 * 9 = 1000 links
SMALL_CHAIN = {"loops": 20, "links_per_loop": 7}  # the README's compare example
PLAN_CHAINS = tuple({"loops": n, "links_per_loop": 7} for n in (20, 42, 83, 166))  # 121 .. 997 links
PLAN_REPEAT_BUDGET = 20.0  # seconds of plan runs per size after which no further run starts
FILL_TARGET = 1.1  # amd, metis fill over GTSAM COLAMD's


# -- the graph ------------------------------------------------------------------------------------
def structure(loops: int) -> tuple:
    """(prior keys, between pairs) of the loops graph: ``7 loops`` priors, ``8 loops - 1`` pairs."""
    priors = list(range(loops * PER_LOOP))
    pairs = []
    for l in range(loops):
        base = PER_LOOP * l
        pairs += [(base + j, base + j + 1) for j in range(PER_LOOP - 1)] + [(base + PER_LOOP - 1, base)]
    pairs += [(PER_LOOP * l + 3, PER_LOOP * (l + 1)) for l in range(loops - 1)]
    return priors, pairs


def check_against_engine() -> str:
    """Whether benchmarks/engine.py's 1400-variable graph is ``structure(200)`` (say which)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import engine
    except Exception as error:  # noqa: BLE001 -- engine.py is optional here (it needs GTSAM, is written elsewhere)
        return f"benchmarks/engine.py not importable ({type(error).__name__}); graph built here"
    same = engine.structure() == structure(engine.LOOPS) and engine.PER_LOOP == PER_LOOP and engine.DIM == DIM
    if not same:
        raise SystemExit("benchmarks/engine.py's graph differs from the builder here; update structure()")
    return f"graph of benchmarks/engine.py (structure() checked equal at {engine.LOOPS} loops)"


def graph_structure(loops: int) -> GraphStructure:
    priors, pairs = structure(loops)
    variables = tuple(Variable(k, DIM) for k in priors)
    factors = tuple(FactorStructure((k,)) for k in priors) + tuple(FactorStructure(p) for p in pairs)
    return GraphStructure(variables, factors)


def gtsam_structure(loops: int):
    import gtsam

    priors, pairs = structure(loops)
    graph = gtsam.SymbolicFactorGraph()
    for k in priors:
        graph.push_factor(k)
    for a, b in pairs:
        graph.push_factor(a, b)
    return graph


# -- fill of an order -----------------------------------------------------------------------------
def fill_of(graph: nx.Graph, order) -> int:
    """Edges that eliminating ``order`` (keys, one at a time) adds to ``graph``."""
    adj = {k: set(graph.adj[k]) for k in graph}
    twice = 0
    for key in order:
        nbrs = adj.pop(key)
        for v in nbrs:
            adj[v].discard(key)
            new = nbrs - adj[v]
            new.discard(v)
            twice += len(new)  # each fill edge is seen from both ends
            adj[v] |= new
    return twice // 2


def nnz_of(graph: nx.Graph, fill: int) -> int:
    """Scalar entries of the factor L: a DIM x DIM block per edge of the filled graph, plus
    the lower triangles of the diagonal blocks."""
    return graph.number_of_nodes() * DIM * (DIM + 1) // 2 + DIM * DIM * (graph.number_of_edges() + fill)


def networkx_order(graph: nx.Graph, heuristic) -> list:
    """The elimination order behind networkx's tree decomposition (recorded, untimed)."""
    order = []

    def recording(graph_dict):
        node = heuristic(graph_dict)
        if node is not None:
            order.append(node)
        return node

    nx_treewidth.treewidth_decomp(graph, recording)
    return order + [k for k in graph if k not in set(order)]  # networkx stops at a clique


# -- timing ---------------------------------------------------------------------------------------
def timed(call, repeat: int) -> tuple:
    """(result, median wall seconds, median CPU seconds) over ``repeat`` calls after one warm-up."""
    out = call()
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = call()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return out, float(np.median(wall)), float(np.median(cpu))


def slope(sizes, times) -> float | None:
    """Growth exponent: least-squares slope of log(time) over log(size)."""
    points = [(n, t) for n, t in zip(sizes, times) if t]
    if len(points) < 2:
        return None
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


# -- the orderings of a git revision ----------------------------------------------------------------
def _module_from(rev: str, path: str, name: str, package: str):
    text = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(name, f.name)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def baseline(rev: str) -> types.SimpleNamespace:
    """``elimination/ordering.py`` and ``mechanics/algorithms.py`` of ``rev``, beside today's modules.

    The old algorithms module is pointed at the old orderings (its ``elimination`` name), so
    its ``tree_min_degree`` is the old game with the old predicates."""
    ordering = _module_from(rev, "elimination/ordering.py", "elimination._baseline_ordering", "elimination")
    algorithms = _module_from(rev, "mechanics/algorithms.py", "mechanics._baseline_algorithms", "mechanics")
    algorithms.elimination = types.SimpleNamespace(min_degree=ordering.min_degree, min_fill=ordering.min_fill)
    return types.SimpleNamespace(rev=rev, ordering=ordering, algorithms=algorithms)


# -- the measurements -----------------------------------------------------------------------------
def loops_graph_rows(args, old) -> list:
    """One row per (method, size): times, fill, nnz."""
    import gtsam

    rows = []
    for loops in args.loops:
        structure_ = graph_structure(loops)
        graph = structure_.interaction_graph()
        n = graph.number_of_nodes()
        methods = {f"ours {name}": (lambda f=getattr(elimination, name): f(structure_).keys())
                   for name in ("natural", "min_degree", "min_fill", "amd", "metis")}
        if old is not None and n <= args.baseline_max:
            for name in ("natural", "min_degree", "min_fill"):
                methods[f"{old.rev} {name}"] = lambda f=getattr(old.ordering, name): f(structure_).keys()
        if n <= args.networkx_max:
            methods["networkx treewidth_min_degree"] = lambda: nx_treewidth.treewidth_min_degree(graph)
            methods["networkx treewidth_min_fill_in"] = lambda: nx_treewidth.treewidth_min_fill_in(graph)
        symbolic = gtsam_structure(loops)
        methods["gtsam COLAMD"] = lambda: gtsam.Ordering.ColamdSymbolicFactorGraph(symbolic)
        if gtsam_has_metis():
            methods["gtsam METIS"] = lambda: gtsam.Ordering.MetisSymbolicFactorGraph(symbolic)
        for method, call in methods.items():
            out, wall, cpu = timed(call, args.repeat)
            if method.startswith("networkx"):
                heuristic = nx_treewidth.MinDegreeHeuristic(graph).best_node if "degree" in method else nx_treewidth.min_fill_in_heuristic
                order = networkx_order(graph, heuristic)
            elif method.startswith("gtsam"):
                order = [out.at(i) for i in range(out.size())]
            else:
                order = out
            fill = fill_of(graph, order)
            rows.append({"method": method, "variables": n, "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3,
                         "fill_edges": fill, "nnz_L": nnz_of(graph, fill)})
            print(f"  {method:<34}{n:>6}{wall * 1e3:>11.2f}{cpu * 1e3:>11.2f}{fill:>9}{nnz_of(graph, fill):>10}", flush=True)
    return rows


def gtsam_has_metis() -> bool:
    """Whether this GTSAM orders by METIS (a build without METIS lacks or refuses it)."""
    import gtsam

    try:
        return gtsam.Ordering.MetisSymbolicFactorGraph(gtsam_structure(2)).size() == 2 * PER_LOOP
    except (AttributeError, RuntimeError):
        return False


def fill_ratios(rows: list) -> list:
    """Per size: the fill of amd, metis and GTSAM's METIS over GTSAM COLAMD's (None where absent)."""
    by_size = {}
    for row in rows:
        by_size.setdefault(row["variables"], {})[row["method"]] = row["fill_edges"]
    ratios = []
    for n, fill in by_size.items():
        colamd = fill.get("gtsam COLAMD")
        ratio = {label: (fill[m] / colamd if colamd and m in fill else None)
                 for label, m in (("amd", "ours amd"), ("metis", "ours metis"), ("gtsam_metis", "gtsam METIS"))}
        ratios.append({"variables": n, "colamd_fill": colamd, **ratio})
    return ratios


def mechanics_rows(args, old) -> list:
    """LCABA's ordering on 1000 links; the mechanics orderings on the small chain."""
    rows = []
    cases = [(LCABA_CHAIN, "alm", "tree_min_degree")]
    cases += [(SMALL_CHAIN, "alm", "tree_min_degree")] + [(SMALL_CHAIN, "prox", f) for f in ("any_min_degree", "any_min_fill")]
    for chain, policy, name in cases:
        mech = models.chain_of_loops(**chain)
        structure_ = layout_of(mech, Algorithm(policy, getattr(mechanics.algorithms, name))).structure()
        versions = [("ours", mechanics.algorithms)] + ([(old.rev, old.algorithms)] if old is not None else [])
        for label, module in versions:
            repeat = args.repeat if label == "ours" else 1
            ordering, wall, cpu = timed(lambda f=getattr(module, name): f(mech, structure_), repeat)
            row = {"method": f"{label} {name}", "mechanism": mech.name, "links": len(mech.links), "policy": policy,
                   "variables": len(structure_.variables), "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3}
            rows.append(row)
            print(f"  {row['method']:<30}{mech.name:<24}{policy:<6}{row['variables']:>6}{wall * 1e3:>11.2f}{cpu * 1e3:>11.2f}",
                  flush=True)
    return rows


PLAN_CHILD = """
import sys, time, json
sys.path.insert(0, {root!r})
import elimination
from mechanics import models
from mechanics.algorithms import ALGORITHMS, joint_space, layout_of


def run(chain):
    mech = models.chain_of_loops(**chain)  # fresh: nothing from mech.plans
    structure = layout_of(mech, ALGORITHMS["proxltl"]).structure()
    w, c = time.perf_counter(), time.process_time()
    ordering = joint_space(mech, structure)
    times = [time.perf_counter() - w, time.process_time() - c]
    w, c = time.perf_counter(), time.process_time()
    elimination.analyze(structure, ordering)
    times += [time.perf_counter() - w, time.process_time() - c]
    return len(mech.links), len(structure.variables), times


run({{"loops": 1, "links_per_loop": 3}})  # warm-up: imports, first calls
runs = [run({chain!r})]
while len(runs) < {repeat} and sum(sum(r[2][::2]) for r in runs) < {budget}:
    runs.append(run({chain!r}))
names = ("ordering_wall_s", "ordering_cpu_s", "analyze_wall_s", "analyze_cpu_s")
median = lambda i: sorted(r[2][i] for r in runs)[len(runs) // 2]
print(json.dumps({{"links": runs[0][0], "variables": runs[0][1], "runs": len(runs),
                  **{{name: median(i) for i, name in enumerate(names)}}}}))
"""


def plan_once(args, chain: dict) -> dict:
    """proxLTL's plan on one chain of loops, in a child process (analyze may take minutes)."""
    code = PLAN_CHILD.format(root=str(ROOT), chain=chain, repeat=args.repeat, budget=PLAN_REPEAT_BUDGET)
    row = {"chain": _call(chain)}
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=args.plan_timeout)
    except subprocess.TimeoutExpired:
        return {**row, "timeout_s": args.plan_timeout}
    if done.returncode:
        return {**row, "error": done.stderr.strip().splitlines()[-1]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {**row, **out, "plan_wall_s": out["ordering_wall_s"] + out["analyze_wall_s"],
            "plan_cpu_s": out["ordering_cpu_s"] + out["analyze_cpu_s"]}


def plan_rows(args) -> list:
    """proxLTL's plan over ``PLAN_CHAINS``; after a timeout or failure the larger chains are skipped."""
    rows = []
    for chain in PLAN_CHAINS:
        if rows and ("timeout_s" in rows[-1] or "error" in rows[-1] or "skipped" in rows[-1]):
            rows.append({"chain": _call(chain), "skipped": "a smaller chain timed out or failed"})
        else:
            rows.append(plan_once(args, chain))
        print_plan_row(rows[-1])
    return rows


def plan_growth(rows: list) -> dict:
    """Growth exponents (over links) of the ordering, analyze and the whole plan, wall and CPU."""
    done = [r for r in rows if "links" in r]
    links = [r["links"] for r in done]
    return {f"{part}_{clock}": slope(links, [r[f"{part}_{clock}_s"] for r in done])
            for part in ("ordering", "analyze", "plan") for clock in ("wall", "cpu")} | {"links": links}


# -- printing -------------------------------------------------------------------------------------
def growth_rows(rows: list) -> dict:
    """Per method: the growth exponents of wall and CPU time, and the sizes they span."""
    by_method = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    return {m: {"wall": slope([r["variables"] for r in rs], [r["wall_ms"] for r in rs]),
                "cpu": slope([r["variables"] for r in rs], [r["cpu_ms"] for r in rs]),
                "sizes": [r["variables"] for r in rs]} for m, rs in by_method.items()}


def _call(chain: dict) -> str:
    return "chain_of_loops(" + ", ".join(f"{k}={v}" for k, v in chain.items()) + ")"


def _ratio(x) -> str:
    return f"{x:.2f}x" if x is not None else "-"


PLAN_HEADER = (f"  {'proxltl plan':<44}{'links':>6}{'vars':>6}{'runs':>5}{'order ms':>10}"
               f"{'analyze s':>11}{'plan s':>9}{'plan cpu s':>12}")


def print_plan_row(row: dict) -> None:
    if "links" not in row:
        why = (f"did not finish in {row['timeout_s']:g} s" if "timeout_s" in row
               else f"failed: {row['error']}" if "error" in row else f"skipped ({row['skipped']})")
        print(f"  {row['chain']:<44}{why}", flush=True)
        return
    print(f"  {row['chain']:<44}{row['links']:>6}{row['variables']:>6}{row['runs']:>5}"
          f"{row['ordering_wall_s'] * 1e3:>10.2f}{row['analyze_wall_s']:>11.3f}{row['plan_wall_s']:>9.3f}"
          f"{row['plan_cpu_s']:>12.3f}", flush=True)


def print_summary(growth, ratios, plan_growth_) -> None:
    print()
    print(f"  {'growth exponent (log-log slope)':<36}{'wall':>7}{'cpu':>7}  sizes")
    for method, g in growth.items():
        if g["wall"] is not None:
            print(f"  {method:<36}{g['wall']:>7.2f}{g['cpu']:>7.2f}  {min(g['sizes'])}..{max(g['sizes'])}")
    print()
    print(f"fill over GTSAM COLAMD's (target: amd, metis <= {FILL_TARGET}x; GTSAM's METIS for reference)")
    for r in ratios:
        print(f"  {r['variables']:>6} variables (COLAMD fill {r['colamd_fill']}): amd {_ratio(r['amd'])}, "
              f"metis {_ratio(r['metis'])}, gtsam METIS {_ratio(r['gtsam_metis'])}")
    if plan_growth_ is None:
        return
    print()
    print(f"proxltl plan growth over links {plan_growth_['links']} (target <= 1.2), wall / cpu:")
    for part in ("ordering", "analyze", "plan"):
        wall, cpu = plan_growth_[f"{part}_wall"], plan_growth_[f"{part}_cpu"]
        print(f"  {part:<10}" + (f"{wall:>7.2f}{cpu:>7.2f}" if wall is not None else "  - (fewer than 2 sizes)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per measurement (median; default 5)")
    parser.add_argument("--loops", type=int, nargs="+", default=list(LOOPS), help="sizes, in loops of 7 variables")
    parser.add_argument("--baseline", metavar="REV", help="also time the orderings of git revision REV")
    parser.add_argument("--baseline-max", type=int, default=1400, help="largest graph for --baseline (variables)")
    parser.add_argument("--networkx-max", type=int, default=5600, help="largest graph for networkx (variables)")
    parser.add_argument("--plan-timeout", type=float, default=300.0,
                        help="seconds for proxltl's plan per chain size (child process; default 300)")
    parser.add_argument("--no-plan", action="store_true", help="skip proxltl's plan")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()

    old = baseline(args.baseline) if args.baseline else None
    source = check_against_engine()
    print(f"loops graph: {source}; {PER_LOOP} variables of dimension {DIM} per loop; medians of {args.repeat} calls "
          f"(baseline mechanics orderings: 1 call)")
    print()
    print(f"  {'ordering':<34}{'vars':>6}{'wall ms':>11}{'cpu ms':>11}{'fill':>9}{'nnz(L)':>10}")
    rows = loops_graph_rows(args, old)
    print()
    print(f"  {'mechanics ordering':<30}{'mechanism':<24}{'policy':<6}{'vars':>6}{'wall ms':>11}{'cpu ms':>11}")
    mech_rows = mechanics_rows(args, old)
    plan, plan_growth_ = [], None
    if not args.no_plan:
        print()
        print(f"{PLAN_HEADER}   (targets: plan <= 0.5 s at 121 links, <= 2 s at ~1000)")
        plan = plan_rows(args)
        plan_growth_ = plan_growth(plan)
    growth, ratios = growth_rows(rows), fill_ratios(rows)
    print_summary(growth, ratios, plan_growth_)
    if args.json:
        out = {"graph": source, "repeat": args.repeat, "baseline": args.baseline, "python": platform.python_version(),
               "networkx": nx.__version__, "machine": platform.machine(), "cpus": os.cpu_count(),
               "load_average": os.getloadavg(), "loops_graph": rows, "growth": growth, "fill_vs_colamd": ratios,
               "mechanics": mech_rows, "proxltl_plan": plan, "proxltl_plan_growth": plan_growth_}
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
