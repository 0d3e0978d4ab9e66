"""One self-contained HTML page to watch eliminations step by step, two orderings side by side.

:func:`elimination_page` writes what the frames show (:func:`viz.views.elimination_frames` with
``keep_eliminated``) as data -- node positions (:mod:`viz.layout`), the graph's edges, per frame the
front, its separator, the eliminated nodes, the fill it creates and its flops, and the clique tree --
into one HTML file whose small script draws it as SVG.  Nothing is fetched at view time.

On the page: a slider and the arrow keys step through the elimination; each panel shows the current
front (gold), its separator (outlined), the fill so far (red, labelled with its step; purple where the
other panel's ordering never creates that edge), the flops per step as a bar chart (axes labelled),
and the clique tree, drawn at full size in a scrolling box, with the current cliques highlighted.  The
two panels open on two orderings that differ (:func:`default_pair`).  Works for any factor graph with plans, not only
mechanisms.
"""
from __future__ import annotations

import html
import json
from typing import Callable

from .dot import node_id
from .layout import fixed_positions, grouped_interaction
from .views import _label, elimination_frames


def page_data(plan, positions: dict, group: Callable | None = None, front: Callable | None = None) -> dict:
    """What one panel draws: nodes, edges, frames and the clique tree of ``plan`` (on its own structure),
    as JSON-ready data.  Fill edges carry the number of the frame (step) that made them; a frame carries its
    number and its plan steps (the clique tree's nodes); ``front``: :func:`viz.views.elimination_frames`'."""
    group = group or (lambda key: key)
    frames = elimination_frames(plan.structure, plan, group=group, keep_eliminated=True, front=front)
    first = frames[0].graph if frames else None
    nodes = [{"id": node_id(n), "label": _label(n), "x": positions[n][0], "y": positions[n][1]} for n in first or []]
    base = [[node_id(u), node_id(v)] for u, v, d in first.edges(data=True) if d.get("fill_step") is None] if first else []
    fill, out = [], []
    for frame in frames:
        states = frame.graph.nodes(data="state")
        created = [[node_id(u), node_id(v), d["fill_step"]] for u, v, d in frame.graph.edges(data=True) if d["fill"]]
        fill += created
        out.append({
            "title": frame.title,
            "number": frame.number,
            "steps": [s.index for s in frame.steps],
            "frontal": [node_id(n) for n, s in states if s == "frontal"],
            "separator": [node_id(n) for n, s in states if s == "separator"],
            "eliminated": [node_id(n) for n, s in states if s == "eliminated"],
            "fill": created,
            "flops": float(sum(s.flops for s in frame.steps)),
        })
    tree = plan.tree()
    cliques = [{"step": int(n), "parent": next((int(p) for p in tree.predecessors(n)), None),  # edges parent -> child
                "label": ", ".join(_label(k) for k in d["frontal"]),
                "separator": ", ".join(_label(k) for k in d["separator"])} for n, d in tree.nodes(data=True)]
    return {"nodes": nodes, "edges": base, "fill": fill, "frames": out, "tree": cliques,
            "flops": float(plan.flops)}


CONTRAST = ("lcaba", "proxbbo")  # 000's two orderings, Fig. 4 against Fig. 5: open side by side where both are given


def default_pair(plans: dict, group: Callable | None = None) -> tuple:
    """The two plans the page opens side by side: :data:`CONTRAST` when both are in ``plans``, else the
    first plan and the first after it that eliminates in another order (of ``group`` nodes) -- two panels
    that step alike show nothing -- else the first two.

    >>> import networkx as nx, elimination
    >>> from factorgraph import GraphStructure
    >>> path = GraphStructure.from_networkx(nx.path_graph(3))
    >>> orders = {"a": [0, 1, 2], "b": [0, 1, 2], "c": [2, 1, 0]}
    >>> default_pair({name: elimination.analyze(path, elimination.Ordering([k] for k in order))
    ...               for name, order in orders.items()})
    ('a', 'c')
    """
    group = group or (lambda key: key)
    if all(name in plans for name in CONTRAST):
        return CONTRAST
    names = list(plans)
    order = {name: [group(k) for s in plan.steps for k in s.frontal] for name, plan in plans.items()}
    other = next((name for name in names[1:] if order[name] != order[names[0]]), names[1] if len(names) > 1 else None)
    return (names[0],) if other is None else (names[0], other)


def elimination_page(plans: dict, title: str = "elimination", positions: dict | None = None,
                     group: Callable | None = None, pair: tuple | None = None, fronts: dict | None = None) -> str:
    """The HTML of the page for ``plans`` (name -> Plan), every one drawn at ``positions``.

    Parameters
    ----------
    plans : dict
        Name -> :class:`elimination.Plan` (of one graph, or of one mechanism under several policies);
        two open side by side (``pair``), a menu picks others.
    positions : dict, optional
        Display node -> ``(x, y)`` points (:mod:`viz.layout`); by default a layout of the grouped
        interaction graph.
    group : callable, optional
        Display node of a variable (:func:`viz.views.link_group` for mechanisms).
    pair : tuple of str, optional
        The names opened first; by default :func:`default_pair`, two that eliminate in different orders.
    fronts : dict, optional
        Name -> ``key -> front`` (:func:`viz.views.cluster_fronts`: each embedded cluster one frame).

    Examples
    --------
    >>> import numpy as np, elimination
    >>> from factorgraph import FactorGraph, Quadratic, Variable
    >>> g = FactorGraph()
    >>> for k in range(3): g.add_variable(Variable(k, 1))
    >>> for k in range(2): _ = g.add(Quadratic([k, k + 1], np.eye(2)))
    >>> page = elimination_page({"natural": elimination.analyze(g, elimination.natural(g))})
    >>> page.startswith("<!DOCTYPE html>") and not any(s in page for s in ("src=", "<link", "@import", "fetch("))
    True
    """
    group = group or (lambda key: key)
    if not plans or not all(plan.steps for plan in plans.values()):
        raise ValueError("elimination_page needs at least one plan, each with at least one step to show")
    pair = tuple(pair) if pair is not None else default_pair(plans, group)
    if not pair or not set(pair) <= set(plans):
        raise ValueError(f"elimination_page: pair {pair} names plans it was not given ({', '.join(plans)})")
    if positions is None:
        positions = fixed_positions(grouped_interaction(next(iter(plans.values())).structure, group))
    data = {name: page_data(plan, positions, group, (fronts or {}).get(name)) for name, plan in plans.items()}
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the script
    return (PAGE.replace("__TITLE__", html.escape(title)).replace("__PAIR__", json.dumps(list(pair)))
            .replace("__DATA__", payload))


PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
 body { font-family: Helvetica, Arial, sans-serif; margin: 12px; color: #222; }
 .panels { display: flex; gap: 16px; flex-wrap: wrap; }
 .panel { flex: 1 1 480px; border: 1px solid #ccc; border-radius: 6px; padding: 8px; min-width: 420px; }
 .panel h2 { font-size: 15px; margin: 2px 0 6px; }
 .facts { font-size: 13px; margin: 4px 0; min-height: 3.6em; }
 .facts b { font-weight: 600; }
 svg text { font-size: 11px; }
 input[type=range] { width: 100%; }
 .legend { font-size: 12px; color: #555; margin: 6px 0 10px; }
 .swatch { display: inline-block; width: 12px; height: 12px; vertical-align: middle; margin: 0 3px 0 10px; }
 .caption { font-size: 12px; color: #555; margin: 8px 0 2px; }
 .treebox { max-height: 380px; overflow: auto; border-top: 1px solid #eee; }
 .tree { display: block; margin: 0 auto; }
 .tree text { font-size: 12px; }
 .bars text.axis-label { font-size: 12px; fill: #333; }
</style></head>
<body>
<h1 style="font-size:18px;margin:4px 0">__TITLE__</h1>
<div class="legend">arrow keys or the sliders step through the elimination;
 <span class="swatch" style="background:gold"></span>front
 <span class="swatch" style="border:2px solid darkorange"></span>separator
 <span class="swatch" style="background:#ddd"></span>eliminated
 <span class="swatch" style="background:red"></span>fill (the step that made it)
 <span class="swatch" style="background:purple"></span>fill the other ordering does not create</div>
<div class="panels" id="panels"></div>
<script>
const DATA = __DATA__;
const PAIR = __PAIR__;
const NAMES = Object.keys(DATA);
const SVGNS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); }
function key(u, v) { return u < v ? u + "|" + v : v + "|" + u; }
const panels = [];
function makePanel(slot, name) {
  const root = document.createElement("div"); root.className = "panel"; root.id = "panel-" + slot;
  const menu = document.createElement("select"); menu.id = "ordering-" + slot;
  for (const n of NAMES) { const o = document.createElement("option"); o.value = n; o.textContent = n; menu.appendChild(o); }
  menu.value = name;
  const head = document.createElement("h2"); head.appendChild(menu);
  root.appendChild(head);
  const slider = document.createElement("input"); slider.type = "range"; slider.min = 0; slider.id = "slider-" + slot;
  root.appendChild(slider);
  const facts = document.createElement("div"); facts.className = "facts"; root.appendChild(facts);
  facts.innerHTML = '<div id="step-' + slot + '"></div><div>front: <b id="front-' + slot + '"></b></div>' +
    '<div>separator: <b id="separator-' + slot + '"></b></div><div>fill so far: <b id="fill-' + slot + '"></b> edges' +
    ' &middot; flops of this step: <b id="flops-' + slot + '"></b></div>';
  const graph = el("svg", {id: "graph-" + slot, width: "100%"}); root.appendChild(graph);
  const bars = el("svg", {id: "bars-" + slot, class: "bars", width: "100%"}); root.appendChild(bars);
  const caption = document.createElement("div"); caption.className = "caption";
  caption.textContent = "clique tree: one box per elimination, the root (eliminated last) on top; gold: this step's; " +
    "hover a box for its separator";
  root.appendChild(caption);
  const box = document.createElement("div"); box.className = "treebox"; box.id = "treebox-" + slot;
  root.appendChild(box);
  const tree = el("svg", {id: "tree-" + slot, class: "tree"}); box.appendChild(tree);
  document.getElementById("panels").appendChild(root);
  const panel = {slot, name, index: 0, menu, slider, graph, bars, tree, box};
  menu.onchange = () => { panel.name = menu.value; panel.index = 0; drawAll(); };
  slider.oninput = () => { panel.index = +slider.value; draw(panel); };
  panels.push(panel);
}
function otherFill(panel) {
  const other = panels.find(p => p !== panel);
  return other ? new Set(DATA[other.name].fill.map(e => key(e[0], e[1]))) : null;
}
function draw(panel) {
  const d = DATA[panel.name], frames = d.frames, i = Math.min(panel.index, frames.length - 1);
  panel.index = i; panel.slider.max = frames.length - 1; panel.slider.value = i;
  const f = frames[i], s = panel.slot;
  document.getElementById("step-" + s).textContent = f.title + " (" + f.number + " of " + frames.length + ")";
  const label = {}; for (const n of d.nodes) label[n.id] = n.label;
  document.getElementById("front-" + s).textContent = f.frontal.map(id => label[id]).join(", ");
  document.getElementById("separator-" + s).textContent = f.separator.map(id => label[id]).join(", ") || "-";
  const soFar = d.fill.filter(e => e[2] <= f.number);
  document.getElementById("fill-" + s).textContent = soFar.length;
  document.getElementById("flops-" + s).textContent = f.flops.toExponential(2);
  drawGraph(panel, d, f, soFar);
  drawBars(panel.bars, frames, i);
  drawTree(panel, d, f);
}
function drawGraph(panel, d, f, soFar) {
  const g = panel.graph; clear(g);
  const xs = d.nodes.map(n => n.x), ys = d.nodes.map(n => n.y), pad = 50;
  const x0 = Math.min(...xs) - pad, y1 = Math.max(...ys) + pad, w = Math.max(...xs) - x0 + pad, h = y1 - Math.min(...ys) + pad;
  g.setAttribute("viewBox", "0 0 " + w + " " + h); g.setAttribute("height", Math.min(h, 560));
  const at = {}; for (const n of d.nodes) at[n.id] = [n.x - x0, y1 - n.y];
  const gone = new Set(f.eliminated), front = new Set(f.frontal), sep = new Set(f.separator);
  const others = otherFill(panel);
  for (const [u, v] of d.edges) {
    const faded = gone.has(u) || gone.has(v);
    el("line", {x1: at[u][0], y1: at[u][1], x2: at[v][0], y2: at[v][1], stroke: faded ? "#ddd" : "#333", "stroke-width": 1.2}, g);
  }
  for (const [u, v, step] of soFar) {
    const faded = gone.has(u) || gone.has(v), own = others && !others.has(key(u, v));
    const color = faded ? "#f2c4c4" : own ? "purple" : "red";
    const line = el("line", {x1: at[u][0], y1: at[u][1], x2: at[v][0], y2: at[v][1], stroke: color,
      "stroke-width": step === f.number ? 3 : 1.6, class: "fill" + (own ? " unique" : "")}, g);
    line.dataset.step = step;
    if (!faded) { const t = el("text", {x: (at[u][0] + at[v][0]) / 2 + 3, y: (at[u][1] + at[v][1]) / 2 - 3, fill: color}, g); t.textContent = step; }
  }
  for (const n of d.nodes) {
    const [x, y] = at[n.id], rx = Math.max(18, 3.6 * n.label.length + 8);
    const state = front.has(n.id) ? "frontal" : sep.has(n.id) ? "separator" : gone.has(n.id) ? "eliminated" : "remaining";
    el("ellipse", {cx: x, cy: y, rx: rx, ry: 14, class: "node " + state, "data-id": n.id,
      fill: state === "frontal" ? "gold" : state === "eliminated" ? "#e4e4e4" : "white",
      stroke: state === "separator" ? "darkorange" : state === "eliminated" ? "#bbb" : "#333",
      "stroke-width": state === "separator" ? 3 : 1, "stroke-dasharray": state === "eliminated" ? "3 2" : ""}, g);
    const t = el("text", {x: x, y: y + 4, "text-anchor": "middle", fill: state === "eliminated" ? "#999" : "#111"}, g);
    t.textContent = n.label;
  }
}
// flops per step: drawn at one unit a pixel (text keeps its size), axes labelled
function drawBars(b, frames, i) {
  clear(b);
  const W = Math.max(320, b.clientWidth || b.parentNode.clientWidth || 480), H = 150;
  const left = 62, right = 8, top = 10, bottom = 40, plotW = W - left - right, plotH = H - top - bottom;
  b.setAttribute("viewBox", "0 0 " + W + " " + H); b.setAttribute("height", H);
  const most = Math.max(...frames.map(q => q.flops)) || 1, bw = plotW / frames.length;
  frames.forEach((q, k) => el("rect", {x: left + k * bw + bw * 0.1, width: bw * 0.8,
    y: top + plotH * (1 - q.flops / most), height: plotH * q.flops / most, fill: k === i ? "gold" : "#8aa",
    class: "bar" + (k === i ? " current" : "")}, b));
  el("line", {x1: left, y1: top, x2: left, y2: top + plotH, stroke: "#333"}, b);
  el("line", {x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, stroke: "#333"}, b);
  for (const [value, y] of [[0, top + plotH], [most / 2, top + plotH / 2], [most, top]]) {
    el("line", {x1: left - 4, y1: y, x2: left, y2: y, stroke: "#333"}, b);
    const t = el("text", {x: left - 6, y: y + 4, "text-anchor": "end", class: "tick"}, b);
    t.textContent = value === 0 ? "0" : value.toExponential(1);
  }
  const every = Math.ceil(frames.length / Math.max(1, Math.floor(plotW / 28)));  // ticks at least 28 px apart
  frames.forEach((q, k) => {
    if (k % every !== 0 && k !== frames.length - 1) return;
    const t = el("text", {x: left + (k + 0.5) * bw, y: top + plotH + 14, "text-anchor": "middle", class: "tick"}, b);
    t.textContent = q.number;
  });
  const xLabel = el("text", {x: left + plotW / 2, y: H - 6, "text-anchor": "middle", class: "axis-label"}, b);
  xLabel.textContent = "step";
  const yLabel = el("text", {x: 0, y: 0, "text-anchor": "middle", class: "axis-label",
    transform: "translate(13," + (top + plotH / 2) + ") rotate(-90)"}, b);
  yLabel.textContent = "flops";
}
// clique tree: the root on top, each leaf a column of its own, a parent above the middle of its children;
// drawn at one unit a pixel in a scrolling box, so that its text stays readable however large the tree
function drawTree(panel, d, f) {
  const t = panel.tree; clear(t);
  const children = {}, roots = [];
  for (const c of d.tree) (c.parent === null ? roots : (children[c.parent] = children[c.parent] || [])).push(c);
  const short = c => c.label.length > 24 ? c.label.slice(0, 23) + "…" : c.label;
  const boxW = Math.max(60, 7 * Math.max(...d.tree.map(c => short(c).length)) + 16), colW = boxW + 14, rowH = 34;
  const pos = {}; let column = 0, depth = 0;
  const place = (c, level) => {
    const kids = children[c.step] || [];
    kids.forEach(k => place(k, level + 1));
    const x = kids.length ? kids.reduce((sum, k) => sum + pos[k.step][0], 0) / kids.length : column++;
    pos[c.step] = [x, level]; depth = Math.max(depth, level);
  };
  roots.forEach(r => place(r, 0));
  const W = column * colW, H = (depth + 1) * rowH + 8;
  t.setAttribute("width", W); t.setAttribute("height", H); t.setAttribute("viewBox", "0 0 " + W + " " + H);
  const at = c => [(pos[c.step][0] + 0.5) * colW, pos[c.step][1] * rowH + rowH / 2 + 4];
  const byStep = {}; for (const c of d.tree) byStep[c.step] = c;
  for (const c of d.tree) if (c.parent !== null) {
    const [x1, y1] = at(c), [x2, y2] = at(byStep[c.parent]);
    el("line", {x1: x1, y1: y1, x2: x2, y2: y2, stroke: "#999"}, t);
  }
  let current = null;
  for (const c of d.tree) {
    const [x, y] = at(c), now = f.steps.includes(c.step);
    const r = el("rect", {x: x - boxW / 2, y: y - 12, width: boxW, height: 24, rx: 4,
      fill: now ? "gold" : "white", stroke: "#555", class: "clique" + (now ? " current" : "")}, t);
    r.dataset.step = c.step;
    const txt = el("text", {x: x, y: y + 4, "text-anchor": "middle"}, t);
    txt.textContent = short(c);
    el("title", {}, r).textContent = c.label + " | " + (c.separator || "-");
    if (now && current === null) current = [x, y];
  }
  if (current) {  // the current cliques in view
    panel.box.scrollTop = current[1] - panel.box.clientHeight / 2;
    panel.box.scrollLeft = current[0] - panel.box.clientWidth / 2;
  }
}
function drawAll() { for (const p of panels) draw(p); }
makePanel("A", PAIR[0]);
if (PAIR.length > 1) makePanel("B", PAIR[1]);
drawAll();
window.addEventListener("resize", drawAll);
document.addEventListener("keydown", e => {
  const step = e.key === "ArrowRight" || e.key === "ArrowDown" ? 1 : e.key === "ArrowLeft" || e.key === "ArrowUp" ? -1 : 0;
  if (!step || e.target.tagName === "SELECT") return;
  for (const p of panels) { p.index = Math.max(0, p.index + step); draw(p); }
  e.preventDefault();
});
</script>
</body></html>
"""

__all__ = ["elimination_page", "page_data"]
