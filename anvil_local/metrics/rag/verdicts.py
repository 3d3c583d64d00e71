"""One small question, one verdict: yes / no / idk read from the judge's logits.

DeepEval asks for a JSON list of verdicts in one generation, which a small model can break.
Here each verdict is its own question whose answer is one of the allowed labels, chosen by
the grammar and read with the probability of every label: it cannot fail to parse, and an
expected score can be computed from the probabilities beside DeepEval's hard count.

The prompt puts what the verdicts of a case share (the context, the input) in its blocks
and the item (a claim, a statement, a node) in its question, so the judge reads the shared
part once for all the items of a case.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import Ask, Usage
from anvil_local.judge.session import JudgeSession, decide
from anvil_local.metrics.result import Trace

#: A verdict's value (DeepEval's) -> the label the judge answers with.
LABELS: dict[str, str] = {"yes": "Yes", "no": "No", "idk": "Unclear"}
YES_NO: tuple[str, ...] = ("yes", "no")
YES_NO_IDK: tuple[str, ...] = ("yes", "no", "idk")

#: How long a list a model-extraction call may generate (truths, claims, questions).
EXTRACT_MAX_TOKENS = 400


def cue(answers: Sequence[str]) -> str:
    """The answer hint closing a question: "(Yes or No)", "(Yes, No or Unclear)"."""
    labels = [LABELS[a] for a in answers]
    return f"({', '.join(labels[:-1])} or {labels[-1]})"


def field_block(title: str, value: str | Sequence[Any]) -> str:
    """A prompt block: a heading, then the text (a list one "- " line an item)."""
    if isinstance(value, str):
        body = value.strip()
    else:
        body = "\n".join(f"- {str(item).strip()}" for item in value)
    return f"{title}:\n{body}\n\n"


def case_prompt(fields: Sequence[tuple[str, Any]], question: str, case_id: str | None) -> Prompt:
    """The header, the shared fields in order, then the question."""
    return Prompt((HEADER, *(field_block(t, v) for t, v in fields)), question, case_id)


@dataclass
class Verdict:
    """DeepEval's verdict (`verdict`, `reason`) on one item, with what was asked about and
    the judge's probability of each answer."""

    verdict: str
    item: str = ""
    probabilities: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    group: int | None = None  # the node or window the item belongs to, where there are several

    @property
    def statement(self) -> str:
        return self.item

    @property
    def claim(self) -> str:
        return self.item

    def p(self, answer: str) -> float:
        """The probability of `answer` (0 for an answer the question did not allow)."""
        return float(self.probabilities.get(answer, 0.0))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"item": self.item, "verdict": self.verdict}
        data["probabilities"] = {k: round(v, 6) for k, v in self.probabilities.items()}
        if self.reason:
            data["reason"] = self.reason
        if self.group is not None:
            data["group"] = self.group
        return data


@dataclass
class Asked:
    """The verdicts of one step and what asking them cost."""

    verdicts: list[Verdict] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def ask_all(
    session: JudgeSession,
    prompts: Sequence[tuple[str, Prompt]],
    answers: Sequence[str],
    group: int | None = None,
) -> Asked:
    """A verdict for each (item, prompt), in order, sharing the prompts' blocks: asked
    together (one request to a decision server; in order on a local judge)."""
    asked = Asked()
    labels = tuple(LABELS[a] for a in answers)
    results = decide(session, [Ask(prompt, labels) for _, prompt in prompts])
    for (item, _), result in zip(prompts, results, strict=True):
        probabilities = dict(zip(answers, (float(p) for p in result.probabilities), strict=True))
        asked.verdicts.append(Verdict(answers[result.index], item, probabilities, group=group))
        asked.usage = asked.usage + result.usage
    return asked


def extract_list(session: JudgeSession, prompt: Prompt) -> tuple[list[str], Usage]:
    """A JSON list of strings generated under its grammar (`extraction="model"`): the one
    shape the judge can produce, so it always parses."""
    schema = {"type": "array", "items": {"type": "string", "minLength": 1}}
    result = session.generate(prompt, EXTRACT_MAX_TOKENS, schema=schema)
    try:
        items = json.loads(result.text)
    except json.JSONDecodeError:
        # the token budget ran out inside the list: keep the items it completed
        items = (
            json.loads(result.text[: result.text.rfind('",') + 1] + "]")
            if '",' in (result.text)
            else []
        )
    return [str(s).strip() for s in items if str(s).strip()], result.usage


@dataclass
class VerdictTrace(Trace):
    """How a decomposed metric's score came about: every verdict in its step, the score by
    DeepEval's count and the expected score from the probabilities."""

    metric: str  # the metric kind
    formula: str
    steps: dict[str, list[Verdict]]
    expected_score: float | None
    extracted: dict[str, list[str]] = field(default_factory=dict)
    breakdown: dict[str, float] | None = None
    #: What the metric object exposes after `measure` (DeepEval's attribute names).
    attributes: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "verdicts",
            "metric": self.metric,
            "formula": self.formula,
            "expected_score": None
            if self.expected_score is None
            else round(self.expected_score, 6),
        }
        if self.breakdown is not None:
            data["breakdown"] = {k: round(v, 6) for k, v in self.breakdown.items()}
        if self.extracted:
            data["extracted"] = self.extracted
        data["steps"] = {k: [v.to_dict() for v in vs] for k, vs in self.steps.items()}
        return data

    def lines(self) -> list[str]:
        out = [f"  score = {self.formula}"]
        if self.expected_score is not None:
            out.append(f"  expected score (from the probabilities) = {self.expected_score:.3f}")
        if self.breakdown:
            out.append("  " + ", ".join(f"{k} {v:.3f}" for k, v in self.breakdown.items()))
        for step, verdicts in self.steps.items():
            out.append(f"  {step}:")
            for v in verdicts:
                p = v.p(v.verdict)
                where = f"[{v.group}] " if v.group is not None else ""
                out.append(f"    {v.verdict:<3} {p:.2f}  {where}{_short(v.item)}")
        return out


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
