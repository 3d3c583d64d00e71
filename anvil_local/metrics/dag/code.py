"""Code nodes: deterministic DAG nodes that compute instead of asking the judge.

- `code` (a yes/no node): a check (`anvil_local.metrics.checks`) on a field or on a task
  output above it; a numeric check becomes a verdict through `at_least` / `at_most`.
- `code_choice` (a multiple-choice node): a numeric check binned into its verdicts: verdict i
  is taken when the value is at most `bins[i]`; the last verdict takes the rest.
- `code_task` (a task node): the matches of a regex, one per line, shown to the nodes below
  under its `output_label` like an LLM task's output.

The branch a code node takes has probability 1, and the trace records the computed value, so
a soft walk and the expected score treat it like a certain verdict. Code nodes read the fields
they name in `fields` (or the task output named in `reads`) and add nothing to the judge's
prompts.
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.results import Usage
from anvil_local.metrics.checks import bounds, compare, run_check, validate_check
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    _params,
)
from anvil_local.metrics.dag.walk import Answer, Visible
from anvil_local.registry import register_node
from anvil_local.testcase import LLMTestCase, SingleTurnParams, as_param

_READING = {"fields", "reads", "source", "label"}


class _Reads:
    """What a code node reads: named case fields, or a task output visible on the walk, and
    optionally a second field to compare with (`source`)."""

    builder: ClassVar[str | None] = None  # not a DeepEval kind: no `children=` warning

    fields: list[SingleTurnParams]
    reads: str | None
    source: SingleTurnParams | None

    def _set_reading(self, fields: Any, reads: Any, source: Any) -> None:
        self.fields = _params(fields) or []
        if reads is not None and (not isinstance(reads, str) or not reads.strip()):
            raise MetricDefinitionError("'reads' must name a task node's output_label")
        self.reads = reads
        self.source = as_param(source) if source is not None else None
        if not self.fields and self.reads is None:
            raise MetricDefinitionError("a code node needs 'fields' or 'reads'")

    def required_fields(self) -> list[SingleTurnParams]:
        return [*self.fields, *([self.source] if self.source else [])]

    def _text(self, case: LLMTestCase, visible: Visible) -> str:
        if self.reads is not None:
            for output in visible:
                if output.label.strip() == self.reads.strip():
                    return output.text
            raise MetricDefinitionError(f"no task output {self.reads!r} above this code node")
        return "\n\n".join(self._field_text(case, p) for p in self.fields)

    def _field_text(self, case: Any, param: Any) -> str:
        """One field's text (a conversational code node reads its turns instead)."""
        return _field_text(case, param)

    def _value(self, case: LLMTestCase, visible: Visible) -> bool | float:
        """The node's check on what it reads (code nodes with a `check` and `args`)."""
        return run_check(self.check, self._text(case, visible), self._source(case), self.args)  # type: ignore[attr-defined]

    def _source(self, case: LLMTestCase) -> str | None:
        return self._field_text(case, self.source) if self.source is not None else None

    def _reading_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if self.fields:
            spec["fields"] = [p.value for p in self.fields]
        if self.reads is not None:
            spec["reads"] = self.reads
        if self.source is not None:
            spec["source"] = self.source.value
        return spec


def _field_text(case: LLMTestCase, param: SingleTurnParams) -> str:
    value = case.get(param)
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _describe(check: str, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"code: {check}({shown})"


def _args(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MetricDefinitionError("'args' must be a table of the check's arguments")
    return dict(value)


@register_node(
    "code",
    {"check", "args", "at_least", "at_most", "verdicts", *_READING},
)
class CodeNode(_Reads, BinaryJudgementNode):
    """A yes/no node decided by a check."""

    step_type: ClassVar[str] = "code"

    def __init__(
        self,
        check: str,
        args: dict[str, Any] | None = None,
        *,
        fields: Any = None,
        reads: str | None = None,
        source: Any = None,
        at_least: float | None = None,
        at_most: float | None = None,
        children: list[Any] | None = None,
        label: str | None = None,
    ) -> None:
        self.check = check
        self.args = _args(args)
        validate_check(check, self.args)
        self.at_least, self.at_most = bounds(at_least, at_most)
        self._set_reading(fields, reads, source)
        super().__init__(_describe(check, self.args), children or [], None, label)

    def answer(self, asker: Any, visible: Visible) -> Answer:
        start = time.perf_counter()
        value = self._value(asker.case, visible)
        verdict = compare(value, {"at_least": self.at_least, "at_most": self.at_most})
        return Answer(
            self.criteria,
            Usage(),
            time.perf_counter() - start,
            options=("Yes", "No"),
            probabilities=(1.0, 0.0) if verdict else (0.0, 1.0),
            index=0 if verdict else 1,
            value=value,
        )

    def to_spec(self, name_of: Any) -> dict[str, Any]:
        spec = super().to_spec(name_of)
        del spec["criteria"]
        spec.update(check=self.check, args=self.args, **self._reading_spec())
        if self.at_least is not None:
            spec["at_least"] = self.at_least
        if self.at_most is not None:
            spec["at_most"] = self.at_most
        return spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> CodeNode:
        return cls(
            spec.get("check"),  # type: ignore[arg-type]
            spec.get("args"),
            fields=spec.get("fields"),
            reads=spec.get("reads"),
            source=spec.get("source"),
            at_least=spec.get("at_least"),
            at_most=spec.get("at_most"),
            label=label,
        )


@register_node("code_choice", {"check", "args", "bins", "verdicts", *_READING})
class CodeChoiceNode(_Reads, NonBinaryJudgementNode):
    """A multiple-choice node: a numeric check binned into the verdicts, in declared order."""

    step_type: ClassVar[str] = "code"

    def __init__(
        self,
        check: str,
        bins: list[float],
        args: dict[str, Any] | None = None,
        *,
        fields: Any = None,
        reads: str | None = None,
        source: Any = None,
        children: list[Any] | None = None,
        label: str | None = None,
    ) -> None:
        if not isinstance(bins, list) or not all(
            isinstance(b, int | float) and not isinstance(b, bool) for b in bins
        ):
            raise MetricDefinitionError("'bins' must be a list of numbers")
        if bins != sorted(bins):
            raise MetricDefinitionError("'bins' must be in increasing order")
        self.check = check
        self.bins = list(bins)
        self.args = _args(args)
        validate_check(check, self.args)
        self._set_reading(fields, reads, source)
        super().__init__(_describe(check, self.args), children or [], None, label)

    def validate(self) -> None:
        super().validate()
        if len(self.bins) != len(self.children) - 1:
            raise MetricDefinitionError(
                f"'bins' needs one upper bound per verdict but the last: {len(self.children) - 1}"
            )

    def answer(self, asker: Any, visible: Visible) -> Answer:
        start = time.perf_counter()
        value = self._value(asker.case, visible)
        if isinstance(value, bool):
            raise MetricDefinitionError(f"check {self.check!r} gives a bool: use a 'code' node")
        index = next((i for i, bound in enumerate(self.bins) if value <= bound), len(self.bins))
        options = tuple(self.options())
        return Answer(
            self.criteria,
            Usage(),
            time.perf_counter() - start,
            options=options,
            probabilities=tuple(1.0 if i == index else 0.0 for i in range(len(options))),
            index=index,
            value=value,
        )

    def to_spec(self, name_of: Any) -> dict[str, Any]:
        spec = super().to_spec(name_of)
        del spec["criteria"]
        spec.update(check=self.check, args=self.args, bins=self.bins, **self._reading_spec())
        return spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> CodeChoiceNode:
        return cls(
            spec.get("check"),  # type: ignore[arg-type]
            spec.get("bins"),  # type: ignore[arg-type]
            spec.get("args"),
            fields=spec.get("fields"),
            reads=spec.get("reads"),
            source=spec.get("source"),
            label=label,
        )


@register_node("code_task", {"pattern", "ignore_case", "output_label", "children", *_READING})
class CodeTaskNode(_Reads, TaskNode):
    """A task node whose output is the regex's matches (group 1 if it has one), one a line."""

    def __init__(
        self,
        pattern: str,
        output_label: str,
        *,
        ignore_case: bool = False,
        fields: Any = None,
        reads: str | None = None,
        children: list[Any] | None = None,
        label: str | None = None,
    ) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise MetricDefinitionError("a code_task node needs a 'pattern'")
        try:
            self.regex = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
        except re.error as exc:
            raise MetricDefinitionError(f"invalid pattern {pattern!r}: {exc}") from exc
        self.pattern = pattern
        self.ignore_case = bool(ignore_case)
        self._set_reading(fields, reads, None)
        super().__init__(f"code: matches of {pattern!r}", output_label, children or [], None, label)

    def answer(self, asker: Any, visible: Visible) -> Answer:
        start = time.perf_counter()
        text = self._text(asker.case, visible)
        found = [m.group(1) if self.regex.groups else m.group(0) for m in self.regex.finditer(text)]
        output = "\n".join(s.strip() for s in found)
        return Answer(self.instructions, Usage(), time.perf_counter() - start, output=output)

    def to_spec(self, name_of: Any) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": self.kind, "pattern": self.pattern}  # type: ignore[attr-defined]
        if self.ignore_case:
            spec["ignore_case"] = True
        spec.update(output_label=self.output_label, **self._reading_spec())
        spec["children"] = [name_of(c) for c in self.children]
        return spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> CodeTaskNode:
        return cls(
            spec.get("pattern"),  # type: ignore[arg-type]
            spec.get("output_label"),  # type: ignore[arg-type]
            ignore_case=spec.get("ignore_case", False),
            fields=spec.get("fields"),
            reads=spec.get("reads"),
            label=label,
        )
