"""One self-contained HTML page to watch eliminations step by step, two orderings side by side.

:func:`elimination_page` writes what the frames show (:func:`viz.views.elimination_frames` with
``keep_eliminated``) as data -- node positions (:mod:`viz.layout`), the graph's edges, per frame the
front, its separator, the eliminated nodes, the fill it creates and its flops, and the clique tree --
into one HTML file whose small script draws it as SVG.  Nothing is fetched at view time.

On the page: a slider and the arrow keys step through the elimination; each panel shows the current
front (gold), its separator (outlined), the fill so far (red, labelled with its step; purple where the
other panel's ordering never creates that edge), the clique tree with the current cliques
highlighted, and the flops per step as a bar chart.  Works for any factor graph with plans, not only
mechanisms.
"""
from __future__ import annotations

import html
import json
from typing import Callable

from .dot import node_id
from .layout import fixed_positions, grouped_interaction
from .views import _label, elimination_frames


def page_data(plan, positions: dict, group: Callable | None = None) -> dict:
    """What one panel draws: nodes, edges, frames and the clique tree of ``plan`` (on its own structure),
    as JSON-ready data."""
    group = group or (lambda key: key)
    frames = elimination_frames(plan.structure, plan, group=group, keep_eliminated=True)
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


def elimination_page(plans: dict, title: str = "elimination", positions: dict | None = None,
                     group: Callable | None = None) -> str:
    """The HTML of the page for ``plans`` (name -> Plan), every one drawn at ``positions``.

    Parameters
    ----------
    plans : dict
        Name -> :class:`elimination.Plan` (of one graph, or of one mechanism under several policies);
        the first two open side by side, a menu picks others.
    positions : dict, optional
        Display node -> ``(x, y)`` points (:mod:`viz.layout`); by default a layout of the grouped
        interaction graph.
    group : callable, optional
        Display node of a variable (:func:`viz.views.link_group` for mechanisms).

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
    if positions is None:
        positions = fixed_positions(grouped_interaction(next(iter(plans.values())).structure, group))
    data = {name: page_data(plan, positions, group) for name, plan in plans.items()}
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the script
    return PAGE.replace("__TITLE__", html.escape(title)).replace("__DATA__", payload)


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
</style></head>
<body>
<h1 style="font-size:18px;margin:4px 0">__TITLE__</h1>
<div class="legend">arrow keys or the sliders step through the elimination;
 <span class="swatch" style="background:gold"></span>front
 <span class="swatch" style="border:2px solid darkorange"></span>separator
 <span class="swatch" style="background:#ddd"></span>eliminated
 <span class="swatch" style="background:red"></span>fill (its step)
 <span class="swatch" style="background:purple"></span>fill the other ordering does not create</div>
<div class="panels" id="panels"></div>
<script>
const DATA = __DATA__;
const NAMES = Object.keys(DATA);
const SVGNS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
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
  const bars = el("svg", {id: "bars-" + slot, width: "100%", height: 60}); root.appendChild(bars);
  const tree = el("svg", {id: "tree-" + slot, width: "100%"}); root.appendChild(tree);
  document.getElementById("panels").appendChild(root);
  const panel = {slot, name, index: 0, menu, slider, graph, bars, tree};
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
  document.getElementById("step-" + s).textContent = "frame " + (i + 1) + " of " + frames.length + " — " + f.title;
  const label = {}; for (const n of d.nodes) label[n.id] = n.label;
  document.getElementById("front-" + s).textContent = f.frontal.map(id => label[id]).join(", ");
  document.getElementById("separator-" + s).textContent = f.separator.map(id => label[id]).join(", ") || "-";
  const soFar = d.fill.filter(e => frames.slice(0, i + 1).some(g => g.steps.includes(e[2])));
  document.getElementById("fill-" + s).textContent = soFar.length;
  document.getElementById("flops-" + s).textContent = f.flops.toExponential(2);
  // the graph
  const g = panel.graph; while (g.firstChild) g.removeChild(g.firstChild);
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
      "stroke-width": f.steps.includes(step) ? 3 : 1.6, class: "fill" + (own ? " unique" : "")}, g);
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
  // flops per frame
  const b = panel.bars; while (b.firstChild) b.removeChild(b.firstChild);
  const top = Math.max(...frames.map(q => q.flops)), bw = 100 / frames.length;
  b.setAttribute("viewBox", "0 0 100 60"); b.setAttribute("preserveAspectRatio", "none");
  frames.forEach((q, k) => el("rect", {x: k * bw + bw * 0.1, width: bw * 0.8, y: 58 - 50 * q.flops / top, height: 50 * q.flops / top,
    fill: k === i ? "gold" : "#8aa"}, b));
  // clique tree: depth from the root, leaves spread by order
  const t = panel.tree; while (t.firstChild) t.removeChild(t.firstChild);
  const byStep = {}; for (const c of d.tree) byStep[c.step] = c;
  const depth = c => c.parent === null ? 0 : 1 + depth(byStep[c.parent]);
  const levels = {}; for (const c of d.tree) (levels[depth(c)] = levels[depth(c)] || []).push(c);
  const rows = Object.keys(levels).length, widest = Math.max(...Object.values(levels).map(l => l.length));
  const tw = Math.max(400, widest * 90), th = rows * 40 + 20;
  t.setAttribute("viewBox", "0 0 " + tw + " " + th); t.setAttribute("height", Math.min(th, 320));
  const pos = {};
  for (const [lvl, cs] of Object.entries(levels)) cs.forEach((c, k) => pos[c.step] = [(k + 0.5) * tw / cs.length, 20 + lvl * 40]);
  for (const c of d.tree) if (c.parent !== null) el("line", {x1: pos[c.step][0], y1: pos[c.step][1], x2: pos[c.parent][0], y2: pos[c.parent][1], stroke: "#999"}, t);
  for (const c of d.tree) {
    const current = f.steps.includes(c.step);
    const r = el("rect", {x: pos[c.step][0] - 40, y: pos[c.step][1] - 11, width: 80, height: 22, rx: 4,
      fill: current ? "gold" : "white", stroke: "#555", class: "clique" + (current ? " current" : "")}, t);
    r.dataset.step = c.step;
    const txt = el("text", {x: pos[c.step][0], y: pos[c.step][1] + 4, "text-anchor": "middle"}, t);
    txt.textContent = c.label.length > 14 ? c.label.slice(0, 13) + "…" : c.label;
    el("title", {}, r).textContent = c.label + " | " + (c.separator || "-");
  }
}
function drawAll() { for (const p of panels) draw(p); }
makePanel("A", NAMES[0]);
if (NAMES.length > 1) makePanel("B", NAMES[1]);
drawAll();
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
