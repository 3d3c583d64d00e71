"""DAGMetric: the judge answers one small question per node; code decides the score.

Every node prompt on a case starts with the same case block (the union of the fields the
graph's nodes look at), then the task outputs visible to the node, then its question, so a
case is prefilled once and each node costs only its short suffix.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.judge.options import argmax_first
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name, check_threshold
from anvil_local.metrics.calibration import CONTENT_FREE, content_free_case, contextual_choose
from anvil_local.metrics.dag.codec import dag_metric_kwargs, dag_metric_to_dict
from anvil_local.metrics.dag.deepeval_model import SchemaJudge, deepeval_judge
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    JudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
)
from anvil_local.metrics.dag.trace import DagTrace, TaskStep, WalkSummary
from anvil_local.metrics.dag.walk import Answer, TaskOutput, Visible, WalkResult, walk
from anvil_local.metrics.examples import examples_block
from anvil_local.metrics.keywords import DeepEvalMeasure, refuse_dag_models
from anvil_local.metrics.layout import case_blocks
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams

TASK_MAX_TOKENS = 160


def task_question(node: TaskNode) -> str:
    return f"{node.instructions.strip()}\nWrite only the {node.output_label.strip()}, briefly."


def judgement_question(node: JudgementNode, listed: list[str] | None = None) -> str:
    """The node's criteria and its answers, as few tokens as the judge needs (`listed`: the
    options in the order the text names them, when rotated).

    Every node of a walk reads this after the case, so each token here is paid per node and
    per case; the grammar already holds the answer to the options, the text only names them.
    """
    if isinstance(node, NonBinaryJudgementNode):
        options = "; ".join(o.strip() for o in (listed or node.options()))
        end = "" if options.endswith((".", "?", "!")) else "."
        return f"{node.criteria.strip()}\nOptions: {options}{end}"
    return f"{node.criteria.strip()} (Yes or No)"


def debiasing_questions(node: JudgementNode) -> list[tuple[str, bool]]:
    """The questions a debiased node asks beyond its own, each with whether its Yes/No read
    flipped: the negation of a yes/no node, or every other rotation of a multiple-choice
    node's listed options."""
    if node.negation is not None:
        return [(f"{node.negation.strip()} (Yes or No)", True)]
    if node.rotate_options and isinstance(node, NonBinaryJudgementNode):
        options = node.options()
        return [
            (judgement_question(node, options[k:] + options[:k]), False)
            for k in range(1, len(options))
        ]
    return []


def visible_blocks(visible: Visible) -> tuple[str, ...]:
    return tuple(f"{o.label.strip()}:\n{o.text.strip()}\n\n" for o in visible)


def _with_examples(blocks: tuple[str, ...], node: Any) -> tuple[str, ...]:
    """A node's worked examples go right after the header, before the case."""
    examples = examples_block(getattr(node, "examples", None), "the question at the end")
    if not examples:
        return blocks
    return (blocks[0], *examples, *blocks[1:])


class _JudgeAsker:
    """Turns walk requests into judge calls on one case."""

    def __init__(
        self,
        case: LLMTestCase,
        session: JudgeSession,
        params: list[SingleTurnParams],
        decode_check: bool = False,
    ) -> None:
        self.case = case
        self._judge = session
        self.params = params
        self.blocks = case_blocks(case, params)
        self.decode_check = decode_check

    def _prompt(self, visible: Visible, question: str, node: Any = None) -> Prompt:
        return Prompt(
            _with_examples(self.blocks, node) + visible_blocks(visible), question, self.case.label
        )

    def _content_free(self, node: JudgementNode, visible: Visible, question: str) -> Prompt:
        """The node's prompt with every case field and task output replaced by "N/A"."""
        blocks = case_blocks(content_free_case(self.params), self.params)
        free = tuple(TaskOutput(o.label, CONTENT_FREE, o.rank) for o in visible)
        return Prompt(_with_examples(blocks, node) + visible_blocks(free), question)

    def task(self, node: TaskNode, visible: Visible) -> Answer:
        question = task_question(node)
        budget = node.max_tokens or TASK_MAX_TOKENS
        prompt = self._prompt(visible, question, node)
        schema = self._schema_judge()
        if schema is not None:
            result = schema.task_output(prompt)
        else:
            result = self._judge.generate(prompt, budget, stop=node.stop or ())
        return Answer(
            question,
            result.usage,
            result.seconds,
            output=result.text.strip(),
            truncated=not result.finished,
        )

    def _schema_judge(self) -> SchemaJudge | None:
        """The DeepEval model answering this walk, if one does (it is asked per node kind,
        with DeepEval's schemas)."""
        judge = getattr(self._judge, "judge", self._judge)
        return judge if isinstance(judge, SchemaJudge) else None

    def _choose(self, node: JudgementNode, visible: Visible, question: str):
        """(choice, the judge's own distribution, the prior) for one question; the last two
        are None without contextual calibration."""
        prompt = self._prompt(visible, question, node)
        schema = self._schema_judge()
        if schema is not None:
            binary = isinstance(node, BinaryJudgementNode)
            return schema.verdict(prompt, node.options(), binary), None, None
        if node.contextual_calibration:
            free = self._content_free(node, visible, question)
            found = contextual_choose(self._judge, prompt, free, node.options())
            return found.choice, found.raw, found.prior
        return self._judge.choose(prompt, node.options()), None, None

    def judge(self, node: JudgementNode, visible: Visible) -> Answer:
        question = judgement_question(node)
        result, raw, prior = self._choose(node, visible, question)
        probabilities, usage, seconds = result.probabilities, result.usage, result.seconds
        others = debiasing_questions(node)
        if others:  # the mean over the question and its debiasing twins
            total = np.asarray(probabilities, dtype=float)
            for other, flipped in others:
                found, _, _ = self._choose(node, visible, other)
                read = found.probabilities[::-1] if flipped else found.probabilities
                total = total + np.asarray(read, dtype=float)
                usage, seconds = usage + found.usage, seconds + found.seconds
            probabilities = tuple(float(v) for v in total / (len(others) + 1))
        decoded = None
        if self.decode_check:
            decoded = self._judge.decode_choice(
                self._prompt(visible, question, node), node.options()
            )
        return Answer(
            question,
            usage,
            seconds,
            options=result.options,
            probabilities=probabilities,
            index=argmax_first(probabilities) if others else result.index,
            decoded=decoded,
            raw=raw,
            prior=prior,
        )

    def metric(self, metric: Any) -> MetricResult:
        return metric.run(self.case, self._judge, include_reason=False)


@register_metric("dag")
class DAGMetric(DeepEvalMeasure, BaseMetric):
    """DeepEval's DAGMetric, deterministic, with verdict probabilities and an expected score."""

    title = "DAG metric"
    run_arguments = BaseMetric.run_arguments | {"decode_check"}
    #: Whether the graph's nodes read a conversation (ConversationalDAGMetric).
    multiturn: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        dag: DeepAcyclicGraph,
        threshold: float = 0.5,
        include_reason: bool = True,
        strict_mode: bool = False,
        model: Any = None,
        verbose_mode: bool = False,
        soft: bool = False,
        soft_floor: float = 0.01,
        decode_check: bool = False,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        async_mode: bool = True,
        flaky: bool = False,
        _include_dag_suffix: bool = True,
    ) -> None:
        check_name(name)
        refuse_dag_models(type(self).__name__, system_one_model, eval_mode)
        if not isinstance(dag, DeepAcyclicGraph):
            raise MetricTypeError(f"dag must be a DeepAcyclicGraph, got {type(dag).__name__}")
        if dag.multiturn != self.multiturn:
            raise MetricDefinitionError(
                "a graph of conversational nodes is a ConversationalDAGMetric's "
                "(conversational_dag in a metric file)"
                if dag.multiturn
                else "a ConversationalDAGMetric needs a graph of conversational nodes"
            )
        if not dag.required_fields():
            raise MetricDefinitionError(
                "no node of the DAG names evaluation_params (or code fields), so no node "
                "would see the test case"
            )
        if not 0 <= soft_floor < 1:
            raise MetricDefinitionError("soft_floor must be in [0, 1)")
        self.name = name
        self.dag = dag
        self.strict_mode = bool(strict_mode)
        self.threshold = 1.0 if self.strict_mode else check_threshold(threshold)
        self.include_reason = bool(include_reason)
        self.model = model
        self.verbose_mode = bool(verbose_mode)
        self.soft = bool(soft)
        self.soft_floor = float(soft_floor)
        self.decode_check = bool(decode_check)  # also record what a constrained decoder says
        # accepted without effect (see metrics.keywords)
        self.system_one_model, self.eval_mode = system_one_model, eval_mode
        self.async_mode, self.flaky = async_mode, flaky
        self._include_dag_suffix = _include_dag_suffix

    @property
    def expected_score(self) -> float | None:
        """After a soft measure: the probability-weighted score over the graph's walks."""
        return self.trace.get("expected_score") if self.trace is not None else None

    def required_params(self) -> list[SingleTurnParams]:
        params = list(self.dag.required_fields())
        for metric in self.dag.metric_children():
            params += [p for p in metric.required_params() if p not in params]
        return params

    def prepare(self, cases: Sequence[LLMTestCase], session: Any) -> None:
        """The metrics hanging off verdicts prepare too: a likelihood contrast below a code
        gate reads every case's reading without the source first, instead of between two
        cases' readings with it (which evicts a shared document from the KV cache). A case
        whose walk never reaches the metric leaves one short unused reading, which the
        session drops at the group's end."""
        for metric in self.dag.metric_children():
            metric.prepare(cases, session)

    def to_dict(self) -> dict[str, Any]:
        return dag_metric_to_dict(self)

    def measure(self, test_case: Any, judge: Any = None, **deepeval: Any) -> float:
        """DeepEval's entry point; a DeepEval model given as `model=` answers the nodes
        (metrics.dag.deepeval_model)."""
        own = judge if judge is not None else deepeval_judge(self.model)
        return super().measure(test_case, own, **deepeval)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DAGMetric:
        return cls(**dag_metric_kwargs(data, cls))

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(
            session if session is not None else deepeval_judge(self.model), self.model
        )
        asker = self.asker(case, session)
        result = walk(self.dag, asker, soft=self.soft, floor=self.soft_floor)
        score = result.main.score
        trace = self._trace(result)
        if score is None:
            return MetricResult(
                metric=self.name,
                score=None,
                success=False,
                threshold=self.threshold,
                error="the walk reached no scoring verdict (a node waits for an edge from a "
                "branch not taken, or a TaskNode has no children)",
                trace=trace,
                usage=result.usage,
                seconds=time.perf_counter() - start,
            )
        if self.strict_mode:
            score = 1.0 if score >= 1.0 else 0.0
        reason_prompt = Prompt(asker.blocks, self._reason_question(result, score), case.label)
        return self.conclude(
            session, reason_prompt, include_reason, score, trace, result.usage, start
        )

    def asker(self, case: Any, session: JudgeSession) -> _JudgeAsker:
        """What answers the walk's nodes on `case`; its `blocks` open the reason prompt."""
        return _JudgeAsker(case, session, self.dag.evaluation_params(), self.decode_check)

    @property
    def _verbose_steps(self) -> list[str]:
        """DeepEval's log of the last `measure`: one line per node the walk ran, then the
        scoring verdicts (ported code reads it)."""
        result = getattr(self, "result", None)
        trace = getattr(result, "trace", None)
        if not isinstance(trace, DagTrace):
            return []
        return [step.summary() for step in trace.path] + [
            f"- verdict {leaf.verdict!r}: score {leaf.score:.2f}" for leaf in trace.leaves
        ]

    def _trace(self, result: WalkResult) -> DagTrace:
        main = result.main
        trace = DagTrace(main.steps, main.leaves, main.probability, soft=self.soft)
        if self.soft:
            trace.expected_score = result.expected_score
            trace.explored_mass = result.explored_mass
            trace.walks = [
                WalkSummary(
                    [f"{s.node}={s.verdict}" for s in w.steps if not isinstance(s, TaskStep)],
                    w.probability,
                    w.score,
                )
                for w in result.walks
            ]
        return trace

    def _reason_question(self, result: WalkResult, score: float) -> str:
        path = "\n".join(step.summary() for step in result.main.steps)
        return (
            f"An evaluation of the test case took these steps:\n{path}\n"
            f"The final score is {score:.2f} on a scale of 0 to 1. In one or two sentences, "
            "give the reason for this score, referring to the steps."
        )
