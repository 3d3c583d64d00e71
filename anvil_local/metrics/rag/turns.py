"""DeepEval's multi-turn RAG metrics: each single-turn question asked of sliding windows of
a conversation, the score the mean over windows (1 with none).

A conversation is cut into units, each the user turns up to and including an assistant
turn. Unit k's window is the last `window_size` units up to k. What a window is asked:

- TurnRelevancy: is the window's last assistant turn relevant to the conversation before
  it (the window's turns)? yes/no; the score is the share not "no".
- TurnFaithfulness: the last assistant turn's claims against every retrieval context in the
  window (Faithfulness's formula per window).
- TurnContextualPrecision / Recall / Relevancy: the single-turn metric with the window's
  user turns as the input, its retrieval contexts as the nodes and the conversation's
  `expected_outcome` as the expected output. A window without retrieval context is not
  scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from anvil_local.conversation import ConversationalTestCase, Turn
from anvil_local.errors import MetricDefinitionError, MissingParamError
from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.rag.base import DecomposedMetric, Found
from anvil_local.metrics.rag.contextual import (
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
)
from anvil_local.metrics.rag.faithfulness import (
    ClaimsAgainstContext,
    check_wording,
    default_model,
)
from anvil_local.metrics.rag.templates import (
    TurnContextualPrecisionTemplate,
    TurnContextualRecallTemplate,
    TurnContextualRelevancyTemplate,
    TurnFaithfulnessTemplate,
    TurnRelevancyTemplate,
)
from anvil_local.metrics.rag.verdicts import YES_NO, Verdict, ask_all, case_prompt, cue
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase


@dataclass
class Unit:
    """User turns, then the assistant turn that answers them."""

    users: list[Turn]
    assistant: Turn


def units(turns: list[Turn]) -> list[Unit]:
    out: list[Unit] = []
    users: list[Turn] = []
    for turn in turns:
        if turn.role == "user":
            users.append(turn)
        else:
            out.append(Unit(users, turn))
            users = []
    return out


def windows(all_units: list[Unit], size: int) -> list[list[Unit]]:
    """Unit k's window: the last `size` units up to and including it."""
    return [all_units[max(0, k - size + 1) : k + 1] for k in range(len(all_units))]


def window_text(window: list[Unit], last_reply: bool = True) -> str:
    lines = []
    for i, unit in enumerate(window):
        lines += [f"user: {u.content.strip()}" for u in unit.users]
        if last_reply or i < len(window) - 1:
            lines.append(f"assistant: {unit.assistant.content.strip()}")
    return "\n".join(lines)


def contexts(window: list[Unit]) -> list[str]:
    return [c for unit in window for c in (unit.assistant.retrieval_context or [])]


def mean(scores: list[float]) -> float:
    return sum(scores) / len(scores) if scores else 1.0


class TurnMetric(DecomposedMetric):
    """A window-by-window metric over a conversation."""

    case_type = ConversationalTestCase
    required = ()
    #: Whether the conversation needs an `expected_outcome` (TurnContextualPrecision/Recall).
    needs_outcome: ClassVar[bool] = False

    def _window_setup(self, given: dict[str, Any], **definition: Any) -> None:
        size = given.get("window_size", 10)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise MetricDefinitionError(f"window_size must be a whole number >= 1, got {size!r}")
        self.window_size = size
        self._setup(given, window_size=size, **definition)

    def required_params(self) -> list[Any]:
        return []

    def check_fields(self, case: Any) -> None:
        if not isinstance(case, ConversationalTestCase):
            raise MissingParamError(self.name, getattr(case, "label", None), "turns")
        if not case.turns:
            raise MissingParamError(self.name, case.label, "turns")
        if self.needs_outcome and not case.expected_outcome:
            raise MissingParamError(self.name, case.label, "expected_outcome")

    def judge_case(self, case: Any, session: JudgeSession) -> Found:
        scores: list[float] = []
        expected: list[float] = []
        steps: dict[str, list[Verdict]] = {}
        usage = Usage()
        for k, window in enumerate(windows(units(case.turns), self.window_size)):
            found = self.judge_window(case, window, session)
            if found is None:
                continue
            scores.append(found.score)
            expected.append(found.expected if found.expected is not None else found.score)
            for step, verdicts in found.steps.items():
                for v in verdicts:
                    v.group = k
                steps.setdefault(step, []).extend(verdicts)
            usage = usage + found.usage
        flagged = [v.item for vs in steps.values() for v in vs if v.verdict == "no"]
        return Found(
            score=mean(scores),
            expected=mean(expected),
            steps=steps,
            usage=usage,
            reason_args=self.window_reason(flagged),
            breakdown={f"window {i + 1}": s for i, s in enumerate(scores)} or None,
            attributes={"verdicts": [v for vs in steps.values() for v in vs]},
        )

    def judge_window(
        self, case: ConversationalTestCase, window: list[Unit], session: JudgeSession
    ) -> Found | None:
        raise NotImplementedError

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        raise NotImplementedError


@register_metric("turn_relevancy")
class TurnRelevancyMetric(TurnMetric):
    title = "turn relevancy metric"
    deepeval_name = "Turn Relevancy"
    template_base = TurnRelevancyTemplate
    formula = "windows whose last assistant turn is not irrelevant / windows; 1 with none"

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
        window_size: int = 10,
        template_class: str | None = None,
        flaky: bool = False,
        evaluation_template: type | str | None = TurnRelevancyTemplate,
        name: str | None = None,
    ) -> None:
        if template_class is not None:
            raise MetricDefinitionError(
                "template_class is DeepEval's internal template lookup; give "
                "evaluation_template a TurnRelevancyTemplate subclass instead"
            )
        self._window_setup(locals())

    def judge_window(self, case, window, session):  # type: ignore[no-untyped-def]
        reply = window[-1].assistant.content
        prompt = case_prompt(
            [("Conversation", window_text(window, last_reply=False))],
            f"{self.question('generate_verdicts', turn=reply)} {cue(YES_NO)}",
            case.label,
        )
        asked = ask_all(session, [(reply, prompt)], YES_NO)
        v = asked.verdicts[0]
        return Found(float(v.verdict != "no"), 1.0 - v.p("no"), {"turns": [v]}, asked.usage)

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        return {"irrelevancies": flagged}


@register_metric("turn_faithfulness")
class TurnFaithfulnessMetric(ClaimsAgainstContext, TurnMetric):
    title = "turn faithfulness metric"
    deepeval_name = "Turn Faithfulness"
    template_base = TurnFaithfulnessTemplate
    formula = "mean over windows with retrieval context of Faithfulness's score; 1 with none"

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
        window_size: int = 10,
        flaky: bool = False,
        evaluation_template: type | str | None = TurnFaithfulnessTemplate,
        extraction: str = "code",
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self.truths_extraction_limit = (
            None if truths_extraction_limit is None else max(int(truths_extraction_limit), 0)
        )
        self.penalize_ambiguous_claims = bool(penalize_ambiguous_claims)
        self._window_setup(
            locals(),
            truths_extraction_limit=self.truths_extraction_limit,
            penalize_ambiguous_claims=self.penalize_ambiguous_claims,
            wording=wording,
        )

    def judge_window(self, case, window, session):  # type: ignore[no-untyped-def]
        chunks = contexts(window)
        if not chunks:
            return None
        return self.judge_claims(case.label, window[-1].assistant.content, chunks, session)

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        return {"contradictions": flagged, "ambiguous": []}


class _SingleTurnWindow(TurnMetric):
    """A contextual metric asked of each window as a single-turn case."""

    single: ClassVar[type] = DecomposedMetric

    def judge_window(self, case, window, session):  # type: ignore[no-untyped-def]
        nodes = contexts(window)
        if not nodes:
            return None
        users = [u.content for unit in window for u in unit.users]
        wording = {"wording": self.wording} if hasattr(self, "wording") else {}
        single = self.single(evaluation_template=self.evaluation_template, **wording)
        as_case = LLMTestCase(
            input="\n".join(users) or window[-1].assistant.content,
            actual_output=window[-1].assistant.content,
            expected_output=case.expected_outcome,
            retrieval_context=list(nodes),
            id=case.label,
        )
        return single.judge_case(as_case, session)


@register_metric("turn_contextual_precision")
class TurnContextualPrecisionMetric(_SingleTurnWindow):
    title = "turn contextual precision metric"
    deepeval_name = "Turn Contextual Precision"
    template_base = TurnContextualPrecisionTemplate
    single = ContextualPrecisionMetric
    needs_outcome = True
    formula = "mean over windows with retrieval context of ContextualPrecision; 1 with none"

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
        window_size: int = 10,
        flaky: bool = False,
        evaluation_template: type | str | None = TurnContextualPrecisionTemplate,
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._window_setup(locals(), wording=wording)

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        return {"irrelevant_nodes": flagged}


@register_metric("turn_contextual_recall")
class TurnContextualRecallMetric(_SingleTurnWindow):
    title = "turn contextual recall metric"
    deepeval_name = "Turn Contextual Recall"
    template_base = TurnContextualRecallTemplate
    single = ContextualRecallMetric
    needs_outcome = True
    formula = "mean over windows with retrieval context of ContextualRecall; 1 with none"

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
        window_size: int = 10,
        flaky: bool = False,
        evaluation_template: type | str | None = TurnContextualRecallTemplate,
        wording: str = "trained",
        name: str | None = None,
    ) -> None:
        self.wording = check_wording(wording)
        model = default_model(model, wording)
        self._window_setup(locals(), wording=wording)

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        return {"supportive_reasons": [], "unsupportive_reasons": flagged}


@register_metric("turn_contextual_relevancy")
class TurnContextualRelevancyMetric(_SingleTurnWindow):
    title = "turn contextual relevancy metric"
    deepeval_name = "Turn Contextual Relevancy"
    template_base = TurnContextualRelevancyTemplate
    single = ContextualRelevancyMetric
    formula = "mean over windows with retrieval context of ContextualRelevancy; 1 with none"

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
        window_size: int = 10,
        flaky: bool = False,
        evaluation_template: type | str | None = TurnContextualRelevancyTemplate,
        name: str | None = None,
    ) -> None:
        self._window_setup(locals())

    def window_reason(self, flagged: list[str]) -> dict[str, Any]:
        return {"irrelevant_statements": flagged, "relevant_statements": []}
