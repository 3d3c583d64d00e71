"""A DAG walk drawn on its graph: every node of the metric's definition, the path the walk
took in colour, each visited judgement with the probability of every option, and the
scoring leaf it reached.

The graph comes from the metric's definition in the results file's metadata; a file without
one (written before metadata existed) still shows the path, as a chain of the nodes walked.
Layout is by layers (a node's longest distance from a root), ordered by where the parents
sit, drawn top to bottom.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from anvil_local.view.svg import esc, fit, rect, svg, text

WIDTH, LEAF_WIDTH, METRIC_WIDTH = 260, 92, 200
HEADER, ROW, GAP, LAYER_GAP, MARGIN = 40, 18, 22, 58, 16


@dataclass
class Node:
    id: str
    kind: str  # task | judge | metric | leaf
    type: str
    title: str
    options: list[str] = field(default_factory=list)
    score: float | None = None  # a leaf's score (0..1)
    name: str = ""  # a metric child's name
    extra_rows: int = 0  # rows under the options (a code node's computed value)
    depth: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def width(self) -> float:
        return {"leaf": LEAF_WIDTH, "metric": METRIC_WIDTH}.get(self.kind, WIDTH)

    @property
    def height(self) -> float:
        if self.kind == "leaf":
            return 30
        if self.kind == "judge":
            return HEADER + ROW * (len(self.options) + self.extra_rows) + 6
        return HEADER + 30


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str


@dataclass
class Graph:
    nodes: dict[str, Node]
    edges: list[Edge]
    roots: list[str]


def verdict_label(value: Any) -> str:
    """A verdict as the walk's trace names it: booleans are "Yes" and "No"."""
    if value is True:
        return "Yes"
    if value is False:
        return "No"
    return str(value)


def _first_line(value: Any) -> str:
    return str(value or "").strip().split("\n")[0]


def graph_from_definition(definition: Mapping[str, Any]) -> Graph:
    """The graph of a DAG metric's definition (`metric.to_dict()`, its metric-file form)."""
    specs: Mapping[str, Any] = definition.get("nodes") or {}
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    for node_id, spec in specs.items():
        kind_of = str(spec.get("type", ""))
        if isinstance(spec.get("verdicts"), list):
            title = spec.get("criteria") or _code_title(spec)
            options = [verdict_label(v.get("verdict")) for v in spec["verdicts"]]
            nodes[node_id] = Node(node_id, "judge", kind_of, _first_line(title), options)
            for index, verdict in enumerate(spec["verdicts"]):
                label = verdict_label(verdict.get("verdict"))
                if verdict.get("then") is not None:
                    edges.append(Edge(node_id, str(verdict["then"]), label))
                elif verdict.get("score") is not None:
                    leaf = f"{node_id}#{index}"
                    score = float(verdict["score"]) / 10
                    nodes[leaf] = Node(leaf, "leaf", "score", f"score {score:.2f}", score=score)
                    edges.append(Edge(node_id, leaf, label))
        elif "children" in spec or kind_of in ("task", "code_task"):
            title = spec.get("instructions") or _code_title(spec)
            nodes[node_id] = Node(node_id, "task", kind_of, _first_line(title))
            edges += [Edge(node_id, str(child), "") for child in spec.get("children") or []]
        else:
            name = str(spec.get("name") or node_id)
            nodes[node_id] = Node(node_id, "metric", kind_of, name, name=name)
    edges = [e for e in edges if e.source in nodes and e.target in nodes]
    targets = {e.target for e in edges}
    roots = [r for r in definition.get("roots") or [] if r in nodes]
    roots = roots or [n for n in nodes if n not in targets]
    return Graph(nodes, edges, roots)


def _code_title(spec: Mapping[str, Any]) -> str:
    if spec.get("check"):
        args = ", ".join(f"{k}={v!r}" for k, v in (spec.get("args") or {}).items())
        return f"code: {spec['check']}({args})"
    if spec.get("pattern"):
        return f"code: matches of {spec['pattern']}"
    return ""


def graph_from_trace(trace: Mapping[str, Any]) -> Graph:
    """Without a definition: the nodes walked, in order, then the leaves reached."""
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    previous: tuple[str, str] | None = None  # (node id, the verdict leaving it)
    for step in trace.get("path") or []:
        node_id = str(step.get("node"))
        if "verdict" in step:
            options = list((step.get("probabilities") or {}).keys())
            node = Node(node_id, "judge", str(step.get("type", "")), "", options)
        else:
            node = Node(node_id, "task", str(step.get("type", "")), "")
        nodes[node_id] = node
        if previous is not None:
            edges.append(Edge(previous[0], node_id, previous[1]))
        previous = (node_id, str(step.get("verdict", "")))
    for index, leaf in enumerate(trace.get("leaves") or []):
        leaf_id = f"leaf#{index}"
        score = float(leaf.get("score") or 0.0)
        nodes[leaf_id] = Node(leaf_id, "leaf", "score", f"score {score:.2f}", score=score)
        if previous is not None:
            edges.append(Edge(previous[0], leaf_id, verdict_label(leaf.get("verdict"))))
    roots = [next(iter(nodes))] if nodes else []
    return Graph(nodes, edges, roots)


# -- what the walk did --------------------------------------------------------------------


@dataclass
class Walk:
    steps: dict[str, Mapping[str, Any]]  # node id -> its step in the trace
    taken: set[Edge]
    metric_scores: dict[str, float]  # a metric child's name -> its score


def walk_on(graph: Graph, trace: Mapping[str, Any]) -> Walk:
    steps = {str(s.get("node")): s for s in trace.get("path") or []}
    metric_scores = {
        str(leaf["metric"].get("metric")): float(leaf["metric"].get("score") or 0.0)
        for leaf in trace.get("leaves") or []
        if isinstance(leaf.get("metric"), dict)
    }
    taken: set[Edge] = set()
    for edge in graph.edges:
        step = steps.get(edge.source)
        if step is None:
            continue
        if "verdict" in step:
            if str(step["verdict"]) == edge.label:
                taken.add(edge)
        elif edge.target in steps:
            taken.add(edge)
    return Walk(steps, taken, metric_scores)


# -- layout ---------------------------------------------------------------------------------


def layout(graph: Graph) -> tuple[float, float]:
    """Place every node; returns the drawing's (width, height)."""
    children: dict[str, list[str]] = {n: [] for n in graph.nodes}
    parents: dict[str, list[str]] = {n: [] for n in graph.nodes}
    for edge in graph.edges:
        children[edge.source].append(edge.target)
        parents[edge.target].append(edge.source)
    order = _discovery_order(graph, children)
    waiting = {n: len(parents[n]) for n in graph.nodes}
    ready = [n for n in order if waiting[n] == 0]
    while ready:  # longest distance from a root, in topological order
        node = ready.pop(0)
        for child in children[node]:
            graph.nodes[child].depth = max(graph.nodes[child].depth, graph.nodes[node].depth + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    rank = {n: i for i, n in enumerate(order)}
    layers: dict[int, list[Node]] = {}
    for node_id in order:
        node = graph.nodes[node_id]
        layers.setdefault(node.depth, []).append(node)
    widths = {d: sum(n.width for n in row) + GAP * (len(row) - 1) for d, row in layers.items()}
    total = max(widths.values(), default=0) + 2 * MARGIN
    y = MARGIN
    for depth in sorted(layers):
        row = layers[depth]
        if depth > 0:  # under the parents, as far as the order allows

            def centre(node: Node) -> float:
                xs = [graph.nodes[p].x + graph.nodes[p].width / 2 for p in parents[node.id]]
                return sum(xs) / len(xs) if xs else total / 2

            row.sort(key=lambda n: (centre(n), rank[n.id]))
        x = (total - widths[depth]) / 2
        for node in row:
            node.x, node.y = x, y
            x += node.width + GAP
        y += max(n.height for n in row) + LAYER_GAP
    return total, y - LAYER_GAP + MARGIN


def _discovery_order(graph: Graph, children: Mapping[str, list[str]]) -> list[str]:
    """Depth first from the roots, options in their order; unreachable nodes last."""
    seen: list[str] = []
    stack = list(reversed(graph.roots))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.append(node)
        stack += reversed(children[node])
    return seen + [n for n in graph.nodes if n not in seen]


# -- drawing --------------------------------------------------------------------------------


def _bezier(p0: float, p1: float, p2: float, p3: float, t: float) -> float:
    u = 1 - t
    return u**3 * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t**3 * p3


def _edges(graph: Graph, walk: Walk) -> list[str]:
    out: list[str] = []
    labels: list[str] = []
    by_source: dict[str, list[Edge]] = {}
    for edge in graph.edges:
        by_source.setdefault(edge.source, []).append(edge)
    for source_id, edges in by_source.items():
        source = graph.nodes[source_id]
        edges.sort(key=lambda e: graph.nodes[e.target].x)
        for index, edge in enumerate(edges):
            target = graph.nodes[edge.target]
            sx = source.x + source.width * (index + 1) / (len(edges) + 1)
            sy = source.y + source.height
            tx, ty = target.x + target.width / 2, target.y
            bend = max(24.0, (ty - sy) / 2)
            cls = "edge taken" if edge in walk.taken else "edge"
            path = f"M{sx:.1f},{sy:.1f} C{sx:.1f},{sy + bend:.1f} {tx:.1f},{ty - bend:.1f} "
            out.append(f'<path class="{cls}" d="{path}{tx:.1f},{ty - 6:.1f}"/>')
            out.append(
                f'<polygon class="{cls} head" points="{tx - 4:.1f},{ty - 7:.1f} '
                f'{tx + 4:.1f},{ty - 7:.1f} {tx:.1f},{ty:.1f}"/>'
            )
            if edge.label:
                lx = _bezier(sx, sx, tx, tx, 0.75)
                ly = _bezier(sy, sy + bend, ty - bend, ty, 0.75)
                labels.append(
                    text(
                        lx,
                        ly + 4,
                        fit(edge.label, min(130.0, target.width + GAP - 6), 10),
                        size=10,
                        anchor="middle",
                        cls="edge-label taken" if edge in walk.taken else "edge-label",
                        tooltip=edge.label,
                    )
                )
    return out + labels  # labels over every line


def _node(node: Node, walk: Walk) -> list[str]:
    step = walk.steps.get(node.id)
    visited = step is not None or (node.kind == "metric" and node.name in walk.metric_scores)
    fired = node.kind == "leaf" and any(e.target == node.id for e in walk.taken)
    state = "visited" if visited else ("fired" if fired else "idle")
    out = [f'<g class="node {node.kind} {state}" data-node="{esc(node.id)}">']
    out.append(rect(node.x, node.y, node.width, node.height, cls="box", rx=6))
    if node.kind == "leaf":
        out.append(
            text(
                node.x + node.width / 2, node.y + 19, node.title, anchor="middle", cls="leaf-label"
            )
        )
        return [*out, "</g>"]
    x, y, w = node.x + 8, node.y, node.width - 16
    out.append(text(x, y + 15, fit(node.id, w - 70), cls="node-id", tooltip=node.id))
    out.append(text(x + w, y + 15, node.type or node.kind, size=9, anchor="end", cls="badge"))
    question = str(step.get("question") or "") if step else ""
    subtitle = node.title or question
    out.append(
        text(
            x,
            y + 31,
            fit(subtitle, w, 10),
            size=10,
            cls="muted",
            tooltip=question or node.title or None,
        )
    )
    if node.kind == "judge":
        out += _options(node, step, x, y + HEADER, w)
    elif node.kind == "task":
        output = step.get("output") if step else None
        if output is not None:
            shown = " · ".join(s.strip() for s in str(output).splitlines() if s.strip())
            out.append(
                text(x, y + HEADER + 12, fit(f"→ {shown}", w), cls="output", tooltip=str(output))
            )
            if step and step.get("truncated"):
                out.append(
                    text(x, y + HEADER + 26, "(cut by its token budget)", size=9, cls="muted")
                )
    elif node.kind == "metric" and node.name in walk.metric_scores:
        score = walk.metric_scores[node.name]
        out.append(text(x, y + HEADER + 12, f"score {score:.3f}", cls="output"))
    return [*out, "</g>"]


def _options(node: Node, step: Mapping[str, Any] | None, x: float, y: float, w: float) -> list[str]:
    probabilities: Mapping[str, float] = (step or {}).get("probabilities") or {}
    verdict = str(step.get("verdict")) if step else None
    names = list(probabilities) if probabilities else node.options
    names += [o for o in node.options if o not in names]
    label_w, bar_w = 0.45 * w, 0.38 * w
    out = []
    for i, option in enumerate(names):
        row_y = y + i * ROW
        chosen = option == verdict
        out.append(
            text(
                x,
                row_y + 12,
                ("✓ " if chosen else "") + fit(option, label_w - 14),
                cls="option chosen" if chosen else "option",
                tooltip=option,
            )
        )
        if step is None:
            continue
        p = float(probabilities.get(option, 0.0))
        out.append(rect(x + label_w, row_y + 4, bar_w, ROW - 8, cls="track"))
        out.append(
            rect(x + label_w, row_y + 4, bar_w * p, ROW - 8, cls="bar top" if chosen else "bar")
        )
        out.append(text(x + w, row_y + 12, f"{p:.1%}", size=10, anchor="end", cls="figure"))
    if step is not None and step.get("value") is not None:
        row_y = y + len(names) * ROW
        out.append(
            text(
                x,
                row_y + 12,
                fit(f"computed value: {step['value']}", w),
                size=10,
                cls="muted",
                tooltip=str(step["value"]),
            )
        )
    return out


def dag_svg(trace: Mapping[str, Any], definition: Mapping[str, Any] | None = None) -> str:
    """The walk of one case drawn on the DAG (on its path alone without a definition)."""
    graph = graph_from_definition(definition) if definition else graph_from_trace(trace)
    if not graph.nodes:
        return ""
    walk = walk_on(graph, trace)
    for node_id, step in walk.steps.items():
        if node_id in graph.nodes and step.get("value") is not None:
            graph.nodes[node_id].extra_rows = 1
    width, height = layout(graph)
    body = _edges(graph, walk)
    for node in graph.nodes.values():
        body += _node(node, walk)
    return svg(width, height, body, "the DAG walk", "dag-walk")
