"""FaithfulnessMetric: is each claim of the output backed by the retrieval context?

Claims are the output's sentences; each is judged against the retrieval context's raw
chunks (read once for all the claims), not against truths a model extracted. By default the
question is the one the shipped faithfulness adapter (`smollm2-135m-faithful`) was taught,
token for token (`wording="trained"`), asked of that adapter unless the metric is given a
model: the context as the Input, the claim as the Actual Output, "supported?" answered Yes
or No. Its No means "not supported", which DeepEval splits
into contradicted (no) and not backed (idk); it counts as no. `wording="deepeval"` asks
DeepEval's three-way question instead (yes / no = contradicted / idk = not said).
"""

from __future__ import annotations

from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.segment import limited, sentences
from anvil_local.metrics.rag.templates import FaithfulnessTemplate
from anvil_local.metrics.rag.verdicts import (
    YES_NO,
    YES_NO_IDK,
    Verdict,
    ask_all,
    case_prompt,
    extract_list,
)
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams, render_param

#: The question the faithfulness adapter was trained on (examples/small_judge/faithfulness.toml).
TRAINED_QUESTION = "Is every statement in the Actual Output supported by the Input? (Yes or No)"
WORDINGS = ("trained", "deepeval")
#: The judge the trained wording was taught to: a metric asking it runs there unless given a
#: model (a run's --model still overrides it, as for examples/small_judge/faithfulness.toml).
TRAINED_MODEL = "smollm2-135m-faithful"


def check_wording(wording: str) -> str:
    if wording not in WORDINGS:
        raise MetricDefinitionError(
            f"wording must be one of {', '.join(WORDINGS)}, got {wording!r}"
        )
    return wording


def default_model(model: Any, wording: str) -> Any:
    """The metric's judge: the one given, else the trained adapter for the trained wording."""
    return TRAINED_MODEL if model is None and wording == "trained" else model


def trained_prompt(context: str, claim: str, case_id: str | None) -> Prompt:
    """The adapter's layout: the context as the Input, the claim as the Actual Output."""
    blocks = (
        HEADER,
        render_param(SingleTurnParams.INPUT, context),
        render_param(SingleTurnParams.ACTUAL_OUTPUT, claim),
    )
    return Prompt(blocks, TRAINED_QUESTION, case_id)


def claim_score(verdicts: list[Verdict], penalize: bool, soft: bool) -> float:
    """DeepEval's faithfulness: (#not "no" - #idk if penalized) / n, 1 when empty; `soft`
    puts each verdict's probabilities in place of its count."""
    if not verdicts:
        return 1.0
    if soft:
        total = sum(1.0 - v.p("no") - (v.p("idk") if penalize else 0.0) for v in verdicts)
    else:
        total = sum((v.verdict != "no") - (penalize and v.verdict == "idk") for v in verdicts)
    return fraction(total, len(verdicts), 1.0)


class ClaimsAgainstContext:
    """Claims judged against a context, shared by Faithfulness and its multi-turn form."""

    def judge_claims(
        self: Any,
        case_id: str | None,
        output: str,
        chunks: list[str],
        session: JudgeSession,
    ) -> Found:
        usage = Usage()
        extracted: dict[str, list[str]] = {}
        if self.extraction == "model":
            claims, used = extract_list(
                session,
                case_prompt(
                    [("Actual Output", output)],
                    self.question("generate_claims", actual_output=output),
                    case_id,
                ),
            )
            truths, used2 = extract_list(
                session,
                case_prompt(
                    [("Retrieval Context", chunks)],
                    self.question(
                        "generate_truths",
                        retrieval_context="\n\n".join(chunks),
                        extraction_limit=self.truths_extraction_limit,
                    ),
                    case_id,
                ),
            )
            usage = usage + used + used2
            if self.truths_extraction_limit is not None:
                truths = truths[: self.truths_extraction_limit * max(1, len(chunks))]
        else:
            claims = sentences(output)
            truths = limited(chunks, self.truths_extraction_limit)
        if self.extraction == "model" or self.truths_extraction_limit is not None:
            extracted["truths"] = truths
            support: list[str] = truths
        else:
            support = chunks
        trained = self.wording == "trained" and not self.overridden("generate_verdicts")
        if trained:
            context = "\n\n".join(support)
            prompts = [(c, trained_prompt(context, c, case_id)) for c in claims]
            asked = ask_all(session, prompts, YES_NO)
        else:
            asked = self.ask_each(
                session,
                case_id,
                [("Retrieval Context", support)],
                "generate_verdicts",
                "claim",
                claims,
                YES_NO_IDK,
            )
        verdicts = asked.verdicts
        penalize = self.penalize_ambiguous_claims
        return Found(
            score=claim_score(verdicts, penalize, soft=False),
            expected=claim_score(verdicts, penalize, soft=True),
            steps={"claims": verdicts},
            usage=usage + asked.usage,
            reason_args={
                "contradictions": [v.item for v in verdicts if v.verdict == "no"],
                "ambiguous": [v.item for v in verdicts if v.verdict == "idk" and penalize],
            },
            extracted=extracted,
            attributes={"claims": claims, "truths": truths, "verdicts": verdicts},
        )


@register_metric("faithfulness")
class FaithfulnessMetric(ClaimsAgainstContext, DecomposedMetric):
    title = "faithfulness metric"
    deepeval_name = "Faithfulness"
    template_base = FaithfulnessTemplate
    required = (
        SingleTurnParams.INPUT,
        SingleTurnParams.ACTUAL_OUTPUT,
        SingleTurnParams.RETRIEVAL_CONTEXT,
    )
    formula = "(claims not contradicted - idk claims if penalized) / claims; 1 with no claims"

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
        truths_extraction_limit: int | None = None,
        penalize_ambiguous_claims: bool = False,
        flaky: bool = False,
        evaluation_template: type | str | None = FaithfulnessTemplate,
        extraction: str = "code",
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        if truths_extraction_limit is not None:
            if not isinstance(truths_extraction_limit, int) or isinstance(
                truths_extraction_limit, bool
            ):
                raise MetricDefinitionError("truths_extraction_limit must be a whole number")
            truths_extraction_limit = max(truths_extraction_limit, 0)
        self.truths_extraction_limit = truths_extraction_limit
        self.penalize_ambiguous_claims = bool(penalize_ambiguous_claims)
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._setup(
            locals(),
            truths_extraction_limit=truths_extraction_limit,
            penalize_ambiguous_claims=self.penalize_ambiguous_claims,
            wording=wording,
        )

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        return self.judge_claims(
            case.label, case.actual_output or "", list(case.retrieval_context or []), session
        )
