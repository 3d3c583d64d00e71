"""The three contextual metrics: how good the retriever's nodes are.

ContextualPrecision asks of each node whether it helps reach the expected output and
weights the relevant ones by rank; ContextualRecall asks of each sentence of the expected
output whether the retrieved nodes hold it; ContextualRelevancy asks of each sentence of
each node whether it is relevant to the input.
"""

from __future__ import annotations

from typing import Any

from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.faithfulness import check_wording, default_model, trained_prompt
from anvil_local.metrics.rag.segment import sentences
from anvil_local.metrics.rag.templates import (
    ContextualPrecisionTemplate,
    ContextualRecallTemplate,
    ContextualRelevancyTemplate,
)
from anvil_local.metrics.rag.verdicts import (
    YES_NO,
    Asked,
    Verdict,
    ask_all,
    case_prompt,
    cue,
)
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


def weighted_precision(relevance: list[float]) -> float:
    """DeepEval's contextual precision: (1/R) * sum over ranks k of r_k * (relevant in 1..k)/k,
    R the number relevant; 0 when none is. With probabilities for r_k it is the plug-in
    expected score."""
    total = sum(relevance)
    if not relevance or total == 0:
        return 0.0
    seen = 0.0
    acc = 0.0
    for k, r in enumerate(relevance, start=1):
        seen += r
        acc += r * seen / k
    return acc / total


@register_metric("contextual_precision")
class ContextualPrecisionMetric(DecomposedMetric):
    title = "contextual precision metric"
    deepeval_name = "Contextual Precision"
    template_base = ContextualPrecisionTemplate
    required = (
        SingleTurnParams.INPUT,
        SingleTurnParams.RETRIEVAL_CONTEXT,
        SingleTurnParams.EXPECTED_OUTPUT,
    )
    formula = "mean over relevant nodes of the precision at their rank; 0 with none relevant"

    def __init__(
        self,
        threshold: float = 0.5,
        model: Any = None,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        flaky: bool = False,
        evaluation_template: type | str | None = ContextualPrecisionTemplate,
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._setup(locals(), wording=wording)

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        nodes = list(case.retrieval_context or [])
        expected = case.expected_output or ""
        if self.wording == "trained" and not self.overridden("generate_verdicts"):
            # a node is useful for the expected output when it supports it
            prompts = [(node, trained_prompt(node, expected, case.label)) for node in nodes]
        else:
            fields = [("Input", case.input or ""), ("Expected Output", expected)]
            prompts = [
                (
                    node,
                    case_prompt(
                        fields,
                        f"{self.question('generate_verdicts', node=node, rank=k)} {cue(YES_NO)}",
                        case.label,
                    ),
                )
                for k, node in enumerate(nodes, start=1)
            ]
        asked = ask_all(session, prompts, YES_NO)
        verdicts = asked.verdicts
        return Found(
            score=weighted_precision([float(v.verdict == "yes") for v in verdicts]),
            expected=weighted_precision([v.p("yes") for v in verdicts]),
            steps={"nodes": verdicts},
            usage=asked.usage,
            reason_args={
                "irrelevant_ranks": [k for k, v in enumerate(verdicts, 1) if v.verdict != "yes"]
            },
            attributes={"verdicts": verdicts},
        )


@register_metric("contextual_recall")
class ContextualRecallMetric(DecomposedMetric):
    title = "contextual recall metric"
    deepeval_name = "Contextual Recall"
    template_base = ContextualRecallTemplate
    required = (
        SingleTurnParams.INPUT,
        SingleTurnParams.RETRIEVAL_CONTEXT,
        SingleTurnParams.EXPECTED_OUTPUT,
    )
    formula = "expected-output sentences attributable to the nodes / sentences; 0 with none"

    def __init__(
        self,
        threshold: float = 0.5,
        model: Any = None,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        flaky: bool = False,
        evaluation_template: type | str | None = ContextualRecallTemplate,
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._setup(locals(), wording=wording)

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        nodes = list(case.retrieval_context or [])
        items = sentences(case.expected_output)
        if self.wording == "trained" and not self.overridden("generate_verdicts"):
            # attributable to the nodes: supported by them, the adapter's question
            context = "\n\n".join(nodes)
            prompts = [(s, trained_prompt(context, s, case.label)) for s in items]
            asked = ask_all(session, prompts, YES_NO)
        else:
            asked = self.ask_each(
                session,
                case.label,
                [("Retrieval Context", nodes)],
                "generate_verdicts",
                "sentence",
                items,
                YES_NO,
            )
        verdicts = asked.verdicts
        n = len(verdicts)
        return Found(
            score=fraction(sum(v.verdict == "yes" for v in verdicts), n, 0.0),
            expected=fraction(sum(v.p("yes") for v in verdicts), n, 0.0),
            steps={"expected output sentences": verdicts},
            usage=asked.usage,
            reason_args={
                "supportive_reasons": [v.item for v in verdicts if v.verdict == "yes"],
                "unsupportive_reasons": [v.item for v in verdicts if v.verdict != "yes"],
            },
            attributes={"verdicts": verdicts},
        )


class NodeVerdicts:
    """One node's verdicts (DeepEval's ContextualRelevancyVerdicts: `.verdicts`)."""

    def __init__(self, verdicts: list[Verdict]) -> None:
        self.verdicts = verdicts

    def __repr__(self) -> str:
        return f"NodeVerdicts({self.verdicts!r})"


#: DeepEval's reason for a node with nothing to judge.
EMPTY_NODE = "No statements found in provided context."


def node_relevancy(
    metric: DecomposedMetric,
    session: JudgeSession,
    question_input: str,
    nodes: list[str],
    case_id: str | None,
) -> tuple[list[NodeVerdicts], Asked]:
    """Each node's sentences asked against the input; an empty node is one "no"."""
    fields = [("Input", question_input)]
    out: list[NodeVerdicts] = []
    total = Asked()
    for index, node in enumerate(nodes):
        items = sentences(node)
        if not items:
            empty = Verdict("no", node, {"yes": 0.0, "no": 1.0}, EMPTY_NODE, group=index)
            out.append(NodeVerdicts([empty]))
            total.verdicts.append(empty)
            continue
        asked = metric.ask_each(
            session, case_id, fields, "generate_verdicts", "statement", items, YES_NO, index
        )
        out.append(NodeVerdicts(asked.verdicts))
        total.verdicts.extend(asked.verdicts)
        total.usage = total.usage + asked.usage
    return out, total


@register_metric("contextual_relevancy")
class ContextualRelevancyMetric(DecomposedMetric):
    title = "contextual relevancy metric"
    deepeval_name = "Contextual Relevancy"
    template_base = ContextualRelevancyTemplate
    required = (SingleTurnParams.INPUT, SingleTurnParams.RETRIEVAL_CONTEXT)
    formula = "relevant node statements / all node statements; 0 with none"

    def __init__(
        self,
        threshold: float = 0.5,
        model: Any = None,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        flaky: bool = False,
        evaluation_template: type | str | None = ContextualRelevancyTemplate,
        name: str | None = None,
    ) -> None:
        self._setup(locals())

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        nodes, asked = node_relevancy(
            self, session, case.input or "", list(case.retrieval_context or []), case.label
        )
        verdicts = asked.verdicts
        n = len(verdicts)
        return Found(
            score=fraction(sum(v.verdict == "yes" for v in verdicts), n, 0.0),
            expected=fraction(sum(v.p("yes") for v in verdicts), n, 0.0),
            steps={"node statements": verdicts},
            usage=asked.usage,
            reason_args={
                "irrelevant_statements": [v.item for v in verdicts if v.verdict != "yes"],
                "relevant_statements": [v.item for v in verdicts if v.verdict == "yes"],
            },
            attributes={"verdicts_list": nodes},
        )
