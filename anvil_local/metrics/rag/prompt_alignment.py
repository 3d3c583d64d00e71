"""PromptAlignmentMetric: does the output follow each of the prompt's instructions?"""

from __future__ import annotations

from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.templates import PromptAlignmentTemplate
from anvil_local.metrics.rag.verdicts import YES_NO
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


@register_metric("prompt_alignment")
class PromptAlignmentMetric(DecomposedMetric):
    title = "prompt alignment metric"
    deepeval_name = "Prompt Alignment"
    template_base = PromptAlignmentTemplate
    required = (SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT)
    formula = "instructions not unfollowed / instructions; 1 with none"

    def __init__(
        self,
        prompt_instructions: list[str],
        threshold: float = 0.5,
        model: Any = None,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        flaky: bool = False,
        evaluation_template: type | str | None = PromptAlignmentTemplate,
        name: str | None = None,
    ) -> None:
        if not isinstance(prompt_instructions, list | tuple) or not all(
            isinstance(i, str) and i.strip() for i in prompt_instructions
        ):
            raise MetricDefinitionError("prompt_instructions must be a list of instructions")
        if not prompt_instructions:
            raise MetricDefinitionError("prompt_instructions must not be empty")
        self.prompt_instructions = list(prompt_instructions)
        self._setup(locals(), prompt_instructions=self.prompt_instructions)

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        fields = [("Input", case.input or ""), ("Actual Output", case.actual_output or "")]
        asked = self.ask_each(
            session,
            case.label,
            fields,
            "generate_verdicts",
            "instruction",
            self.prompt_instructions,
            YES_NO,
        )
        verdicts = asked.verdicts
        n = len(verdicts)
        return Found(
            score=fraction(sum(v.verdict != "no" for v in verdicts), n, 1.0),
            expected=fraction(sum(1.0 - v.p("no") for v in verdicts), n, 1.0),
            steps={"instructions": verdicts},
            usage=asked.usage,
            reason_args={"unalignment_reasons": [v.item for v in verdicts if v.verdict == "no"]},
            attributes={"verdicts": verdicts},
        )
