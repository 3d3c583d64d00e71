"""SummarizationMetric: min(alignment, coverage), DeepEval's formula.

Alignment: each sentence of the summary (a claim) is asked against the original text, read
once: yes / no / idk, and only yes counts. Coverage: closed questions are answered Yes or
No against the original and against the summary; of those the original answers yes, the
fraction the summary answers yes too. The questions are the user's
`assessment_questions`; else, by a documented rule, "Does the text state that <sentence>?"
for the original's first `n` sentences that are not questions (news and reports put their
main points first); or, with `extraction="model"`, `n` questions the judge writes under a
JSON-list grammar.
"""

from __future__ import annotations

from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found, fraction
from anvil_local.metrics.rag.segment import limited, sentences
from anvil_local.metrics.rag.templates import SummarizationTemplate
from anvil_local.metrics.rag.verdicts import (
    YES_NO,
    YES_NO_IDK,
    Verdict,
    case_prompt,
    extract_list,
)
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


class CoverageVerdict:
    """DeepEval's SummarizationCoverageVerdict: one question's answers on both texts."""

    def __init__(self, question: str, original: Verdict, summary: Verdict) -> None:
        self.question = question
        self.original_verdict = original.verdict
        self.summary_verdict = summary.verdict
        self.original = original
        self.summary = summary

    def __repr__(self) -> str:
        return (
            f"CoverageVerdict(question={self.question!r}, original_verdict="
            f"{self.original_verdict!r}, summary_verdict={self.summary_verdict!r})"
        )


def coverage(pairs: list[tuple[float, float]]) -> float:
    """Of the questions the original answers yes (weight), the share the summary does too."""
    asked = sum(o for o, _ in pairs)
    return sum(o * s for o, s in pairs) / asked if asked else 0.0


@register_metric("summarization")
class SummarizationMetric(DecomposedMetric):
    title = "summarization metric"
    deepeval_name = "Summarization"
    template_base = SummarizationTemplate
    required = (SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT)
    formula = "min(alignment: claims supported / claims, coverage: questions kept / asked)"

    def __init__(
        self,
        threshold: float = 0.5,
        n: int = 5,
        model: Any = None,
        system_one_model: Any = None,
        eval_mode: str | None = None,
        assessment_questions: list[str] | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        truths_extraction_limit: int | None = None,
        flaky: bool = False,
        evaluation_template: type | str | None = SummarizationTemplate,
        extraction: str = "code",
        name: str | None = None,
    ) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise MetricDefinitionError(f"n must be a whole number of questions, got {n!r}")
        if assessment_questions is not None and not all(
            isinstance(q, str) and q.strip() for q in assessment_questions
        ):
            raise MetricDefinitionError("assessment_questions must be a list of questions")
        self.n = n
        self.assessment_questions = list(assessment_questions or []) or None
        self.truths_extraction_limit = (
            None if truths_extraction_limit is None else max(int(truths_extraction_limit), 0)
        )
        self._setup(
            locals(),
            n=n,
            assessment_questions=self.assessment_questions,
            truths_extraction_limit=self.truths_extraction_limit,
        )

    def _questions(self, case: LLMTestCase, session: JudgeSession) -> tuple[list[str], Usage]:
        if self.assessment_questions:
            return list(self.assessment_questions), Usage()
        source = case.input or ""
        if self.extraction == "model":
            found, usage = extract_list(
                session,
                case_prompt(
                    [("Input", source)],
                    self.question("generate_questions", text=source, n=self.n),
                    case.label,
                ),
            )
            return found[: self.n], usage
        statements = [s for s in sentences(source) if not s.endswith("?")]
        return [
            self.question("coverage_question", sentence=s) for s in statements[: self.n]
        ], Usage()

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        source, summary = case.input or "", case.actual_output or ""
        usage = Usage()
        claims = sentences(summary)
        truths = limited([source], self.truths_extraction_limit)
        support = " ".join(truths) if self.truths_extraction_limit is not None else source
        align = self.ask_each(
            session,
            case.label,
            [("Text", support)],
            "generate_alignment_verdicts",
            "claim",
            claims,
            YES_NO_IDK,
        )
        questions, used = self._questions(case, session)
        usage = usage + used + align.usage
        answers: dict[str, list[Verdict]] = {}
        for label, text in (("original", source), ("summary", summary)):
            asked = self.ask_each(
                session,
                case.label,
                [("Text", text)],
                "generate_answers",
                "question",
                questions,
                YES_NO,
            )
            answers[label] = asked.verdicts
            usage = usage + asked.usage
        cover = [
            CoverageVerdict(q, o, s)
            for q, o, s in zip(questions, answers["original"], answers["summary"], strict=True)
        ]
        aligned = align.verdicts
        a_hard = fraction(sum(v.verdict == "yes" for v in aligned), len(aligned), 0.0)
        c_hard = coverage(
            [(float(c.original_verdict == "yes"), float(c.summary_verdict == "yes")) for c in cover]
        )
        a_soft = fraction(sum(v.p("yes") for v in aligned), len(aligned), 0.0)
        c_soft = coverage([(c.original.p("yes"), c.summary.p("yes")) for c in cover])
        a_hard, c_hard = self.strict(a_hard), self.strict(c_hard)
        return Found(
            score=min(a_hard, c_hard),
            expected=min(a_soft, c_soft),
            steps={
                "alignment": aligned,
                "coverage (original)": answers["original"],
                "coverage (summary)": answers["summary"],
            },
            usage=usage,
            reason_args={
                "contradictions": [v.item for v in aligned if v.verdict != "yes"],
                "redundancies": [],
                "questions": [
                    c.question
                    for c in cover
                    if c.original_verdict == "yes" and c.summary_verdict != "yes"
                ],
            },
            extracted={"assessment_questions": questions},
            breakdown={"Alignment": a_hard, "Coverage": c_hard},
            attributes={
                "claims": claims,
                "truths": truths,
                "assessment_questions": questions,
                "coverage_verdicts": cover,
                "alignment_verdicts": aligned,
            },
        )
