"""HallucinationMetric: does the output contradict any of the given contexts? Lower is
better: the score is the fraction of contexts it contradicts.

One question per context, the output read once in the shared blocks. DeepEval's question
forgives missing detail (No only for a contradiction), which the faithfulness adapter's
"supported?" does not: an output drawing on several contexts is never wholly supported by
one of them. So the default wording is DeepEval's; `wording="trained"` asks the adapter's
question of each context (docs/metrics.md).
"""

from __future__ import annotations

from typing import Any

from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.faithfulness import check_wording, default_model, trained_prompt
from anvil_local.metrics.rag.templates import HallucinationTemplate
from anvil_local.metrics.rag.verdicts import YES_NO, ask_all
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


@register_metric("hallucination")
class HallucinationMetric(DecomposedMetric):
    title = "hallucination metric"
    deepeval_name = "Hallucination"
    template_base = HallucinationTemplate
    required = (SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT, SingleTurnParams.CONTEXT)
    formula = "contexts the output contradicts / contexts; 0 with none (lower is better)"
    lower_is_better = True

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
        evaluation_template: type | str | None = HallucinationTemplate,
        wording: str = "deepeval",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._setup(locals(), wording=wording)

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        output = case.actual_output or ""
        contexts = list(case.context or [])
        if self.wording == "trained" and not self.overridden("generate_verdicts"):
            prompts = [(c, trained_prompt(c, output, case.label)) for c in contexts]
            asked = ask_all(session, prompts, YES_NO)
        else:
            asked = self.ask_each(
                session,
                case.label,
                [("Actual Output", output)],
                "generate_verdicts",
                "context",
                contexts,
                YES_NO,
            )
        verdicts = asked.verdicts
        n = len(verdicts)
        return Found(
            score=fraction(sum(v.verdict == "no" for v in verdicts), n, 0.0),
            expected=fraction(sum(v.p("no") for v in verdicts), n, 0.0),
            steps={"contexts": verdicts},
            usage=asked.usage,
            reason_args={"contradictions": [v.item for v in verdicts if v.verdict == "no"]},
            attributes={"verdicts": verdicts},
        )
