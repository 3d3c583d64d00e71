"""AnswerRelevancyMetric: is each statement of the output relevant to the input?"""

from __future__ import annotations

from typing import Any

from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.segment import sentences
from anvil_local.metrics.rag.templates import AnswerRelevancyTemplate
from anvil_local.metrics.rag.verdicts import YES_NO_IDK, case_prompt, extract_list
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


@register_metric("answer_relevancy")
class AnswerRelevancyMetric(DecomposedMetric):
    title = "answer relevancy metric"
    deepeval_name = "Answer Relevancy"
    template_base = AnswerRelevancyTemplate
    required = (SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT)
    formula = "statements not irrelevant (idk counts) / statements; 1 with no statements"

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
        evaluation_template: type | str | None = AnswerRelevancyTemplate,
        extraction: str = "code",
        name: str | None = None,
    ) -> None:
        self._setup(locals())

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        output = case.actual_output or ""
        usage = Usage()
        if self.extraction == "model":
            statements, usage = extract_list(
                session,
                case_prompt(
                    [("Actual Output", output)],
                    self.question("generate_statements", actual_output=output),
                    case.label,
                ),
            )
        else:
            statements = sentences(output)
        asked = self.ask_each(
            session,
            case.label,
            [("Input", case.input or "")],
            "generate_verdicts",
            "statement",
            statements,
            YES_NO_IDK,
            input=case.input,
        )
        verdicts = asked.verdicts
        n = len(verdicts)
        return Found(
            score=fraction(sum(v.verdict != "no" for v in verdicts), n, 1.0),
            expected=fraction(sum(1.0 - v.p("no") for v in verdicts), n, 1.0),
            steps={"statements": verdicts},
            usage=usage + asked.usage,
            reason_args={"irrelevant_statements": [v.item for v in verdicts if v.verdict == "no"]},
            attributes={"statements": statements, "verdicts": verdicts},
        )
