"""Walking a DAG (pure logic: the judge is behind the `Asker` protocol).

Rules, fixed and documented:
- Nodes run in the graph's walk order. An edge arrives when its parent fires: a TaskNode
  sends one to each child; a judgement node only to the verdict it chose; a verdict (a root
  verdict always) to its child. A task or judgement node runs once, after all its parents,
  when as many edges arrived as its `indegree` counts (DeepEval's gating: several verdicts of
  one judgement into the node count as one edge, as only one of them fires); a node still
  short of edges, say one waiting on a branch not taken, does not run. A walk that reaches no
  scoring verdict has no score (an error on the result, never a silent 0).
- A TaskNode's output is visible to every node below it on the walk, labelled with its
  output_label, in walk order.
- When several scoring verdicts fire in one walk, the metric's score is the LOWEST of them:
  every branch that was taken must pass (declaration order never matters).
- Soft walks (`soft=True`) also follow every other verdict whose path probability is at least
  `floor` and report the expected score: the sum over walks of P(walk) x score(walk),
  renormalised over the probability mass explored (reported as `explored_mass`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from anvil_local.errors import MetricDefinitionError, NoTextGeneration
from anvil_local.judge.results import Usage
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.nodes import JudgementNode, TaskNode, VerdictNode, is_node
from anvil_local.metrics.dag.trace import ChoiceStep, Leaf, Step, TaskStep


@dataclass(frozen=True)
class TaskOutput:
    label: str
    text: str
    rank: int  # walk-order index of the task node: fixes the display order


Visible = tuple[TaskOutput, ...]


@dataclass(frozen=True)
class Answer:
    """What the judge said at one node: a task output, or a choice with probabilities."""

    question: str
    usage: Usage
    seconds: float
    output: str | None = None
    options: tuple[str, ...] = ()
    probabilities: tuple[float, ...] = ()
    index: int = 0
    decoded: str | None = None  # a grammar-constrained greedy decode's answer, when asked for
    value: Any = None  # what a code node computed
    truncated: bool = False  # a task output cut by its token budget
    raw: tuple[float, ...] | None = None  # contextual calibration: the judge's own distribution
    prior: tuple[float, ...] | None = None  # ... and the content-free prior divided out


class Asker(Protocol):
    def task(self, node: TaskNode, visible: Visible) -> Answer: ...
    def judge(self, node: JudgementNode, visible: Visible) -> Answer: ...
    def metric(self, metric: Any) -> Any: ...  # a MetricResult


@dataclass
class Walk:
    probability: float
    steps: list[Step]
    leaves: list[Leaf]
    main: bool  # the walk that follows the most probable verdict everywhere

    @property
    def score(self) -> float | None:
        return min(leaf.score for leaf in self.leaves) if self.leaves else None


@dataclass
class WalkResult:
    main: Walk
    walks: list[Walk] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def explored_mass(self) -> float:
        return sum(w.probability for w in self.walks)

    @property
    def expected_score(self) -> float | None:
        """None when an explored walk reached no scoring verdict (its score is undefined)."""
        scores = [w.score for w in self.walks]
        if any(score is None for score in scores):
            return None
        total = sum(w.probability * s for w, s in zip(self.walks, scores, strict=True))
        return total / self.explored_mass


#: Where a walk stands: the next position in the walk order, the nodes activated (with what
#: they see), the edges arrived at each node, the leaves reached, the path's probability,
#: the steps taken, whether it is the main walk.
_Branch = tuple[int, dict[int, Visible], dict[int, int], list[Leaf], float, list[Step], bool]


def _merge(a: Visible, b: Visible) -> Visible:
    merged = {(o.rank, o.label, o.text): o for o in (*a, *b)}
    return tuple(merged[k] for k in sorted(merged))


def walk(
    dag: DeepAcyclicGraph, asker: Asker, soft: bool = False, floor: float = 0.01
) -> WalkResult:
    """Walk the graph; with `soft`, also the other branches above the probability floor."""
    order = dag.order
    indegree = {id(node): count for node, count in dag.indegree.items()}
    answers: dict[tuple[int, Visible], Answer] = {}
    metric_results: dict[int, Any] = {}
    usage = Usage()
    walks: list[Walk] = []

    def ask(node: Any, visible: Visible) -> Answer:
        nonlocal usage
        key = (id(node), visible)
        if key not in answers:
            answers[key] = node.answer(asker, visible)
            usage = usage + answers[key].usage
        return answers[key]

    def run_metric(metric: Any) -> Any:
        nonlocal usage
        if id(metric) not in metric_results:
            metric_results[id(metric)] = asker.metric(metric)
            usage = usage + metric_results[id(metric)].usage
        return metric_results[id(metric)]

    def explore(branch: _Branch) -> list[_Branch]:
        """Follow one branch down the walk order until it forks (the branches it forks
        into, first branch first) or ends (its walk recorded)."""
        pos, live, arrived, leaves, prob, steps, main = branch

        def send(child: Any, seen: Visible) -> None:
            live[id(child)] = _merge(live.get(id(child), ()), seen)
            arrived[id(child)] = arrived.get(id(child), 0) + 1

        for i in range(pos, len(order)):
            node = order[i]
            if id(node) not in live:
                continue
            visible = live[id(node)]
            node_id = dag.node_id(node)
            if not isinstance(node, VerdictNode) and arrived.get(id(node), 0) < indegree[id(node)]:
                continue  # gated: an edge it waits for is on a branch not taken
            if isinstance(node, TaskNode):
                try:
                    answer = ask(node, visible)
                except NoTextGeneration as exc:
                    raise NoTextGeneration(
                        f"task node {node_id!r} needs text, and {exc}: make it a code_task "
                        "node, or judge on a server with /v1/chat/completions (anvil serve "
                        "has one)"
                    ) from None
                out = TaskOutput(node.output_label, answer.output or "", i)
                seen = _merge(visible, (out,))
                for child in node.children:
                    send(child, seen)
                steps = [*steps, _task_step(node_id, node, answer)]
            elif isinstance(node, VerdictNode):
                if node.score is not None:
                    leaves = [*leaves, Leaf(node_id, node.verdict, node.score / 10)]
                elif is_node(node.child):
                    send(node.child, visible)
                else:
                    result = run_metric(node.child)
                    if result.score is None:
                        raise MetricDefinitionError(
                            f"metric {result.metric!r} under verdict {node_id!r} gave no score"
                        )
                    leaves = [
                        *leaves,
                        Leaf(node_id, node.verdict, result.score, metric=result),
                    ]
            elif isinstance(node, JudgementNode):
                answer = ask(node, visible)
                forks = []
                for index in _branches(answer, prob, soft, floor, main):
                    option = answer.options[index]
                    chosen = id(node.verdict_for(option))
                    forks.append(
                        (
                            i + 1,
                            {**live, chosen: visible},
                            {**arrived, chosen: arrived.get(chosen, 0) + 1},
                            leaves,
                            prob * answer.probabilities[index],
                            [*steps, _judge_step(node_id, node, answer, index)],
                            main and index == answer.index,
                        )
                    )
                return forks
        walks.append(Walk(prob, steps, leaves, main))
        return []

    # depth first with an explicit stack (a chain of thousands of nodes is a valid graph):
    # a fork's first branch is walked to its end before the next, as the walks are listed
    start: _Branch = (0, {id(r): () for r in dag.root_nodes}, {}, [], 1.0, [], True)
    pending: list[_Branch] = [start]
    while pending:
        pending += reversed(explore(pending.pop()))
    main_walk = next(w for w in walks if w.main)
    return WalkResult(main=main_walk, walks=walks, usage=usage)


def _branches(answer: Answer, prob: float, soft: bool, floor: float, main: bool) -> list[int]:
    if not soft:
        return [answer.index]
    return [
        i
        for i, p in enumerate(answer.probabilities)
        if (main and i == answer.index) or prob * p >= floor
    ]


def _task_step(node_id: str, node: TaskNode, answer: Answer) -> TaskStep:
    return TaskStep(
        node_id,
        answer.question,
        node.output_label,
        answer.output,
        answer.usage,
        answer.seconds,
        answer.truncated,
    )


def _judge_step(node_id: str, node: JudgementNode, answer: Answer, index: int) -> ChoiceStep:
    return ChoiceStep(
        node=node_id,
        step_type=node.step_type,
        headline=node.criteria.strip().split("\n", 1)[0],
        question=answer.question,
        verdict=answer.options[index],
        probabilities=dict(zip(answer.options, answer.probabilities, strict=True)),
        usage=answer.usage,
        seconds=answer.seconds,
        decoded=answer.decoded,
        value=answer.value,
        raw=_by_option(answer, answer.raw),
        prior=_by_option(answer, answer.prior),
    )


def _by_option(answer: Answer, values: tuple[float, ...] | None) -> dict[str, float] | None:
    return None if values is None else dict(zip(answer.options, values, strict=True))
