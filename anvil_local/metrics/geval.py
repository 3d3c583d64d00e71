"""G-Eval: evaluation steps (generated once per definition and model), then a score whose
exact distribution over every integer in the range is read from the logits.

The score is the probability-weighted mean over the whole range, normalised to 0..1. Unlike
DeepEval no token is dropped, multi-digit values ("10") are exact, and steps are generated
once, cached on disk, and can be pinned in the metric file.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.cache import digest
from anvil_local.errors import GenerationError, MetricDefinitionError, MetricTypeError
from anvil_local.judge.options import argmax_first
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import ChoiceResult, ScoreResult
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.base import (
    BaseMetric,
    MetricResult,
    check_name,
    check_threshold,
    definition_kwargs,
)
from anvil_local.metrics.calibration import content_free_case, contextual_choose
from anvil_local.metrics.examples import (
    Example,
    examples_block,
    examples_to_list,
    parse_examples,
    score_check,
    yes_no_check,
)
from anvil_local.metrics.layout import case_blocks, fields_phrase
from anvil_local.metrics.render import probability_lines
from anvil_local.metrics.result import Trace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import (
    SHARED_PARAMS,
    LLMTestCase,
    SingleTurnParams,
    as_param,
    ordered_params,
    param_title,
)

log = logging.getLogger(__name__)

STEPS_PROMPT_VERSION = "2"
_STEP = r"[^\n]{8,150}"
STEPS_REGEX = rf"1\. {_STEP}\n2\. {_STEP}\n3\. {_STEP}(\n4\. {_STEP})?"


@dataclass(frozen=True)
class Rubric:
    """What a score range means: `score_range=(a, b)` within 0..10, a <= b."""

    score_range: tuple[int, int]
    expected_outcome: str

    def __post_init__(self) -> None:
        rng = tuple(self.score_range)
        if len(rng) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng):
            raise MetricDefinitionError("Rubric's 'score_range' must be two integers.")
        object.__setattr__(self, "score_range", rng)
        start, end = rng
        if not (0 <= start <= 10 and 0 <= end <= 10):
            raise MetricDefinitionError(
                "Both Rubric's 'score_range' values must be between 0 and 10 inclusive."
            )
        if start > end:
            raise MetricDefinitionError(
                "Rubric's 'score_range' start must be less than or equal to end."
            )
        if not isinstance(self.expected_outcome, str) or not self.expected_outcome.strip():
            raise MetricDefinitionError("Rubric's 'expected_outcome' cannot be empty.")

    def line(self) -> str:
        start, end = self.score_range
        span = f"{start}" if start == end else f"{start}-{end}"
        return f"{span}: {self.expected_outcome.strip()}"

    def to_dict(self) -> dict[str, Any]:
        return {"score_range": list(self.score_range), "expected_outcome": self.expected_outcome}


def sort_rubric(rubric: Sequence[Rubric] | None) -> tuple[Rubric, ...] | None:
    """Sorted by start; overlapping ranges (touching ends included) are rejected."""
    if not rubric:
        return None
    items = []
    for item in rubric:
        if isinstance(item, dict):
            item = Rubric(
                score_range=tuple(item.get("score_range", ())),  # type: ignore[arg-type]
                expected_outcome=item.get("expected_outcome", ""),
            )
        if not isinstance(item, Rubric):
            raise MetricTypeError(f"rubric items must be Rubric, got {type(item).__name__}")
        items.append(item)
    items.sort(key=lambda r: r.score_range)
    for a, b in itertools.pairwise(items):
        if a.score_range[1] >= b.score_range[0]:
            raise MetricDefinitionError(
                f"Overlapping score ranges: {a.score_range} and {b.score_range}"
            )
    return tuple(items)


def score_range(rubric: Sequence[Rubric] | None) -> tuple[int, int]:
    """0..10, or the span of the rubric."""
    if not rubric:
        return (0, 10)
    return (rubric[0].score_range[0], rubric[-1].score_range[1])


def normalise(value: float, lo: int, hi: int) -> float:
    return (value - lo) / (hi - lo)


def parse_steps(text: str) -> list[str]:
    """Steps from "1. ...\\n2. ..." text."""
    steps = []
    for line in text.splitlines():
        match = re.match(r"\s*\d+\.\s*(.+)", line)
        if match and match.group(1).strip():
            steps.append(match.group(1).strip())
    return steps


@dataclass
class GEvalTrace(Trace):
    """The steps used, then either the score distribution or the strict verdict."""

    steps: list[str]
    score_range: tuple[int, int] | None = None
    distribution: dict[str, float] | None = None
    weighted: float | None = None
    most_likely: int | None = None
    verdict: str | None = None  # strict mode
    probabilities: dict[str, float] | None = None  # strict mode
    raw: dict[str, float] | None = None  # contextual calibration: the judge's own distribution
    prior: dict[str, float] | None = None  # ... and the content-free one divided out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": "geval", "steps": self.steps}
        if self.verdict is not None:
            data.update(verdict=self.verdict, probabilities=self.probabilities)
        else:
            data.update(
                score_range=list(self.score_range or ()),
                distribution=self.distribution,
                weighted=self.weighted,
                most_likely=self.most_likely,
            )
        if self.prior is not None:
            data.update(uncalibrated=self.raw, prior=self.prior)
        return data

    def lines(self) -> list[str]:
        lines = ["  steps:"]
        lines += [f"   {i}. {s}" for i, s in enumerate(self.steps, 1)]
        if self.verdict is None:
            lo, hi = self.score_range or (0, 0)
            lines.append(f"  distribution over {lo}-{hi} (weighted {self.weighted:.3f}):")
            lines += probability_lines(self.distribution or {}, self.most_likely)
        else:
            lines.append("  strict verdict:")
            lines += probability_lines(self.probabilities or {}, self.verdict)
        if self.prior is not None:
            lines.append("  (calibrated) the judge's own distribution:")
            lines += probability_lines(self.raw or {}, None)
            lines.append("  divided by the content-free prior:")
            lines += probability_lines(self.prior, None)
        return lines


def check_panel(
    metric: GEval, panel: Sequence[GEval | dict[str, Any]] | None
) -> tuple[GEval, ...] | None:
    """The panel's members (definitions without a panel of their own), checked: two or more,
    distinct names, `metric` among them with the same definition, no examples or contextual
    calibration (their prompts would not be shared)."""
    if panel is None:
        return None
    items = [] if isinstance(panel, str | dict) else list(panel)
    if len(items) < 2:
        raise MetricDefinitionError("a G-Eval panel needs a list of two or more G-Eval metrics")
    members: list[GEval] = []
    for item in items:
        if isinstance(item, dict):
            if item.get("type", "geval") != "geval":
                raise MetricDefinitionError("every member of a G-Eval panel is a G-Eval metric")
            item = GEval.from_dict(item)
        if not isinstance(item, GEval):
            raise MetricTypeError(f"panel members must be GEval, got {type(item).__name__}")
        if item.panel is not None:
            item = GEval.from_dict(_standalone(item))
        members.append(item)
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        raise MetricDefinitionError(f"the members of a G-Eval panel need distinct names: {names}")
    for member in members:
        if member.examples or member.contextual_calibration:
            raise MetricDefinitionError(
                f"G-Eval panel member {member.name!r}: examples and contextual calibration "
                "are not available in a panel"
            )
    own = next((m for m in members if m.name == metric.name), None)
    if own is None:
        raise MetricDefinitionError(f"{metric.name!r} is not a member of its own panel {names}")
    if own.to_dict() != _standalone(metric):
        raise MetricDefinitionError(
            f"{metric.name!r}: its definition differs from its entry in the panel"
        )
    return tuple(members)


def _standalone(metric: GEval) -> dict[str, Any]:
    """The metric's definition without its panel."""
    data = metric.to_dict()
    data.pop("panel", None)
    return data


def geval_panel(metrics: Sequence[GEval]) -> list[GEval]:
    """The metrics as one panel: each member's prompt holds every member's definition, then
    the case, then a short cue naming the member, so the case is read once for all of them
    and each member costs only its cue. A member's scores are its scores within this panel
    (the other definitions are part of its prompt), not those of the metric alone."""
    for metric in metrics:
        if not isinstance(metric, GEval):
            raise MetricTypeError(f"panel members must be GEval, got {type(metric).__name__}")
    definitions = [_standalone(m) for m in metrics]
    return [GEval.from_dict({**data, "panel": definitions}) for data in definitions]


@register_metric("geval")
class GEval(BaseMetric):
    """DeepEval's GEval, with exact logit-weighted scores."""

    metric_major = True  # its definition sits between the input and the output (`_blocks`)

    def __init__(
        self,
        name: str,
        evaluation_params: Sequence[SingleTurnParams | str],
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        rubric: Sequence[Rubric] | None = None,
        threshold: float = 0.5,
        strict_mode: bool = False,
        include_reason: bool = True,
        model: Any = None,
        verbose_mode: bool = False,
        examples: Sequence[dict[str, Any] | Example] | None = None,
        contextual_calibration: bool = False,
        panel: Sequence[GEval | dict[str, Any]] | None = None,
    ) -> None:
        check_name(name)
        if evaluation_params is None:
            raise MetricDefinitionError(
                "GEval requires evaluation_params. Provide them at initialization."
            )
        if not list(evaluation_params):
            raise MetricDefinitionError("evaluation_params cannot be an empty list.")
        if criteria is None and evaluation_steps is None:
            raise MetricDefinitionError("Either 'criteria' or 'evaluation_steps' must be provided.")
        if criteria is not None and (not isinstance(criteria, str) or not criteria.strip()):
            raise MetricDefinitionError("Criteria provided cannot be an empty string.")
        if evaluation_steps is not None:
            if isinstance(evaluation_steps, str) or not list(evaluation_steps):
                raise MetricDefinitionError(
                    "'evaluation_steps' must not be an empty list. Either omit evaluation "
                    "steps or include a non-empty list of steps."
                )
            if any(not isinstance(s, str) or not s.strip() for s in evaluation_steps):
                raise MetricDefinitionError("every evaluation step must be a non-empty string")
        self.name = name
        self.evaluation_params = [as_param(p) for p in evaluation_params]
        if len(set(self.evaluation_params)) != len(self.evaluation_params):
            raise MetricDefinitionError("evaluation_params lists a param twice")
        self.criteria = criteria
        self.evaluation_steps = list(evaluation_steps) if evaluation_steps is not None else None
        self.rubric = sort_rubric(rubric)
        self.score_range = score_range(self.rubric)
        if self.score_range[0] == self.score_range[1]:
            raise MetricDefinitionError("the rubric must span at least two scores")
        self.strict_mode = bool(strict_mode)
        self.threshold = 1.0 if self.strict_mode else check_threshold(threshold)
        self.include_reason = bool(include_reason)
        self.model = model
        self.verbose_mode = bool(verbose_mode)
        lo, hi = self.score_range
        self.examples = parse_examples(
            examples,
            self._answer_key(),
            yes_no_check if self.strict_mode else score_check(lo, hi),
            f"GEval {name!r}",
        )
        self.contextual_calibration = bool(contextual_calibration)
        self.steps_generated = 0  # how many times this object asked the judge for steps
        self.panel: tuple[GEval, ...] | None = None
        self.panel = check_panel(self, panel)
        # a panel member's prompts share everything up to the cue with the other members on
        # the same case, so it runs case-major (see run.schedule.pair_order)
        self.metric_major = self.panel is None

    # -- definition ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.kind,
            "name": self.name,
            "evaluation_params": [p.value for p in self.evaluation_params],
            "criteria": self.criteria,
            "evaluation_steps": self.evaluation_steps,
            "rubric": [r.to_dict() for r in self.rubric] if self.rubric else None,
            "threshold": self.threshold,
            "strict_mode": self.strict_mode,
            "include_reason": self.include_reason,
            "examples": examples_to_list(self.examples, self._answer_key()),
            "contextual_calibration": self.contextual_calibration or None,
            "panel": [m.to_dict() for m in self.panel] if self.panel else None,
        }
        return {k: v for k, v in data.items() if v is not None}

    def _answer_key(self) -> str:
        return "verdict" if self.strict_mode else "score"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GEval:
        known = {
            "name",
            "evaluation_params",
            "criteria",
            "evaluation_steps",
            "rubric",
            "threshold",
            "strict_mode",
            "include_reason",
            "examples",
            "contextual_calibration",
            "panel",
        }
        kwargs = definition_kwargs(data, known, "GEval")
        if "rubric" in kwargs and kwargs["rubric"] is not None:
            kwargs["rubric"] = [
                r
                if isinstance(r, Rubric)
                else Rubric(tuple(r.get("score_range", ())), r.get("expected_outcome", ""))
                for r in kwargs["rubric"]
            ]
        return cls(**kwargs)

    # -- steps ---------------------------------------------------------------------------

    def steps_for(self, session: Any) -> list[str]:
        """Pinned steps, else the steps generated once for this definition and model (kept
        by the session and its steps store)."""
        if self.evaluation_steps is not None:
            return list(self.evaluation_steps)
        session = as_session(session, self.model)
        key = digest(
            "steps",
            STEPS_PROMPT_VERSION,
            session.model.sha256,
            self.criteria,
            [p.value for p in self.evaluation_params],
        )
        return session.remembered_steps(key, lambda: self.generate_steps(session))

    def generate_steps(self, session: JudgeSession) -> list[str]:
        """Ask the judge for 3-4 evaluation steps (grammar-constrained to a numbered list)."""
        self.steps_generated += 1
        blocks = (f"Criteria:\n{self.criteria.strip()}\n\n",)  # type: ignore[union-attr]
        question = (
            "Turn these criteria into 3 or 4 numbered steps for a judge checking "
            f"{fields_phrase(self.evaluation_params)}. Each step must check something different."
        )
        result = session.generate(Prompt(blocks, question), max_tokens=700, regex=STEPS_REGEX)
        steps = parse_steps(result.text)
        if not steps:
            raise GenerationError(
                f"the judge wrote no evaluation steps for {self.name!r}; "
                "pin evaluation_steps in the metric"
            )
        log.info("generated %d evaluation steps for %s", len(steps), self.name)
        return steps

    # -- judging -------------------------------------------------------------------------

    def _definition_block(self, steps: list[str]) -> str:
        """Criteria, steps, rubric and the task itself: everything a pair shares with the
        other outputs of its input, so the task is read once per group, not once per pair."""
        lines = self._definition_lines(steps, f"Evaluation criteria ({self.name}):")
        lines.append("")
        lines.append(f"Task: {self.task()}")
        return "\n".join(lines) + "\n\n"

    def _definition_lines(self, steps: list[str], title: str) -> list[str]:
        lines = [title]
        if self.criteria:
            lines.append(self.criteria.strip())
        lines.append("")
        lines.append("Evaluation steps:")
        lines += [f"{i}. {step.strip()}" for i, step in enumerate(steps, 1)]
        if self.rubric and not self.strict_mode:
            lines.append("")
            lines.append("Rubric:")
            lines += [r.line() for r in self.rubric]
        return lines

    def _member_block(self, steps: list[str]) -> str:
        """This metric as one member of a panel: what it judges and its scale, no task."""
        lines = self._definition_lines(steps, f"Metric: {self.name}")
        if self.strict_mode:
            lines.append("Answer: Yes or No.")
        elif not self.rubric:
            lo, hi = self.score_range
            lines.append(f"Scale: {lo} (worst) to {hi} (best).")
        return "\n".join(lines) + "\n\n"

    def _panel_task(self) -> str:
        assert self.panel is not None
        task = (
            "Task: following the evaluation steps of the metric named at the end, score the "
            "test case below on that metric"
        )
        if all(m.strict_mode for m in self.panel):
            task = (
                "Task: following the evaluation steps of the metric named at the end, decide "
                "whether the test case below fully meets that metric's criteria. Reply with Yes "
                "or No only."
            )
        elif any(m.strict_mode for m in self.panel):
            task += (
                ", from the lowest to the highest score of its scale (Yes or No where the metric "
                "says so). Reply with the number, or Yes or No, only."
            )
        else:
            scale = "rubric" if all(m.rubric for m in self.panel) else "rubric or scale"
            task += f", from the lowest to the highest score of its {scale}. "
            task += "Reply with the number only."
        return task + "\n\n"

    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        """The definition blocks of this metric's prompts (`steps`: its own): its definition,
        or, in a panel, every member's definition in declared order, then the panel's task."""
        if self.panel is None:
            return (self._definition_block(steps),)
        blocks = [
            m._member_block(steps if m.name == self.name else m.steps_for(session))
            for m in self.panel
        ]
        return (*blocks, self._panel_task())

    def prompt_params(self) -> list[SingleTurnParams]:
        """Every field in this metric's prompts (a panel's prompts show every member's)."""
        if self.panel is None:
            return list(self.evaluation_params)
        params: list[SingleTurnParams] = []
        for member in self.panel:
            params += [p for p in member.evaluation_params if p not in params]
        return ordered_params(params)

    def _blocks(self, case: LLMTestCase, definition: tuple[str, ...]) -> tuple[str, ...]:
        """Header, worked examples, the fields cases share (the input), the definition
        (criteria, steps, rubric, task), then the case's own fields (the output) and, last, a
        short cue for the answer. Cases with one input and many outputs then share everything
        up to the output: the scheduler runs this metric over such a group back to back, so
        the input is read once per group, the definition once per group and metric, and a
        pair costs only its output and the cue.

        A panel puts the definitions first (shared by every prompt of the run), then the whole
        case (shared by the members on that case), so a member costs only its cue."""
        if self.panel is not None:
            return (HEADER, *definition, *case_blocks(case, self.prompt_params())[1:])
        shared = [p for p in self.evaluation_params if p in SHARED_PARAMS]
        own = [p for p in self.evaluation_params if p not in SHARED_PARAMS]
        examples = examples_block(self.examples, self.name)
        return (
            HEADER,
            *examples,
            *case_blocks(case, shared)[1:],
            *definition,
            *case_blocks(case, own)[1:],
        )

    def _choose(
        self,
        session: JudgeSession,
        case: LLMTestCase,
        definition: tuple[str, ...],
        options: list[str],
    ) -> tuple[ChoiceResult, tuple[float, ...] | None, tuple[float, ...] | None]:
        """The judge's choice among `options`, calibrated when asked: (choice, raw, prior)."""
        prompt = Prompt(self._blocks(case, definition), self._question(), case.label)
        if not self.contextual_calibration:
            if self.strict_mode:
                return session.choose(prompt, options), None, None
            lo, hi = self.score_range
            scored = session.score(prompt, lo, hi)
            best = argmax_first(scored.probabilities)
            choice = ChoiceResult(
                tuple(options), scored.probabilities, best, scored.usage, scored.seconds
            )
            return choice, None, None
        free = Prompt(
            self._blocks(content_free_case(self.evaluation_params), definition), self._question()
        )
        found = contextual_choose(session, prompt, free, options)
        return found.choice, found.raw, found.prior

    def _question(self) -> str:
        """The cue after the output (the task itself is in the definition block); a panel's
        cue names the member."""
        lo, hi = self.score_range
        if self.panel is None:
            return "Verdict (Yes or No):" if self.strict_mode else f"Score ({lo} to {hi}):"
        if self.strict_mode:
            return f"{self.name} verdict (Yes or No):"
        return f"{self.name} score ({lo} to {hi}):"

    def _fields(self) -> str:
        return fields_phrase(self.evaluation_params)

    def task(self) -> str:
        """What the judge is asked, stated before the case's own fields."""
        if self.strict_mode:
            return (
                f"following the evaluation steps, decide whether {self._fields()} fully meet "
                "the criteria. Reply with Yes or No only."
            )
        lo, hi = self.score_range
        return (
            f"following the evaluation steps, score how well {self._fields()} meet the "
            f"criteria, from {lo} (worst) to {hi} (best). Reply with the number only."
        )

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.prompt_params(), self.name)
        session = as_session(session, self.model)
        steps = self.steps_for(session)
        definition = self.definition(session, steps)
        blocks = self._blocks(case, definition)
        lo, hi = self.score_range
        trace = GEvalTrace(steps)
        options = ["Yes", "No"] if self.strict_mode else [str(v) for v in range(lo, hi + 1)]
        choice, raw, prior = self._choose(session, case, definition, options)
        usage = choice.usage
        if raw is not None and prior is not None:
            trace.raw = dict(zip(options, raw, strict=True))
            trace.prior = dict(zip(options, prior, strict=True))
        if self.strict_mode:
            score = 1.0 if choice.choice == "Yes" else 0.0
            trace.verdict, trace.probabilities = choice.choice, choice.distribution()
            summary = f"verdict {choice.choice} (P(Yes) = {choice.probabilities[0]:.3f})"
        else:
            result = ScoreResult(lo, hi, choice.probabilities, choice.usage, choice.seconds)
            weighted = result.weighted
            score = normalise(weighted, lo, hi)
            trace.score_range = (lo, hi)
            trace.distribution = {str(k): v for k, v in result.distribution().items()}
            trace.weighted = weighted
            trace.most_likely = result.most_likely
            summary = f"score {weighted:.2f} on {lo}-{hi}"
        question = (
            f"The evaluation gave {summary}. In one or two sentences, give the reason for "
            "this result, referring to the evaluation steps."
        )
        reason_prompt = Prompt(blocks, question, case.label)
        return self.conclude(session, reason_prompt, include_reason, score, trace, usage, start)

    def required_params(self) -> list[SingleTurnParams]:
        return self.prompt_params()

    def __repr__(self) -> str:
        params = ", ".join(param_title(p) for p in self.evaluation_params)
        return f"GEval(name={self.name!r}, params=[{params}], threshold={self.threshold})"
