"""DAG node classes with DeepEval's names, keywords and validation messages.

Each node type is registered (`register_node`) with the fields its spec may hold, and knows
how to write itself to a metric file's node table (`to_spec`), how to be built from one
(`from_spec`, then `link` once every node exists) and how to get its answer on a walk
(`answer`). A new node type is a subclass of TaskNode (produces text) or JudgementNode
(picks a verdict) plus its registration.

Nodes compare and hash by identity (a graph may hold two nodes with equal fields). Both
building styles work: bottom-up (`children=[...]`, validated at once, with DeepEval's
DeprecationWarning) and top-down (`add_node`, `add_verdict(verdict, score=... | then=...)`,
validated when the graph is built).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.dag.deprecation import warn_bottom_up
from anvil_local.metrics.examples import (
    examples_to_list,
    option_check,
    parse_examples,
    yes_no_check,
)
from anvil_local.registry import register_node
from anvil_local.testcase import SingleTurnParams, as_param

#: Resolves a node id met in a spec to its object: ref(target, what) (what: for errors).
Ref = Callable[[Any, str], Any]
#: Names an object in a spec: the node id of a node, or the id given to a metric child.
NameOf = Callable[[Any], str]


def _params(values: Sequence[Any] | None) -> list[SingleTurnParams] | None:
    if values is None:
        return None
    if isinstance(values, str | SingleTurnParams):
        values = [values]
    return [as_param(v) for v in values]


def _bottom_up(node: Any) -> None:
    """DeepEval's DeprecationWarning for a node of its kinds given `children=`."""
    if node.builder is not None:
        warn_bottom_up(type(node).__name__, node.builder)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MetricDefinitionError(f"{what} must be a non-empty string")
    return value


class BaseNode:
    """DeepEval's base of every node (`isinstance(x, BaseNode)` ports): what a task and a
    judgement node share is how they take `children=` and `evaluation_params` and how a
    metric file's spec becomes their keywords."""

    children: list[Any]
    evaluation_params: list[Any] | None
    #: The top-down builder DeepEval's warning names for `children=` (None: no warning).
    builder: ClassVar[str | None] = None

    @staticmethod
    def read_params(values: Sequence[Any] | None) -> list[Any] | None:
        """`evaluation_params` as the node's param enum (a conversational node's differs)."""
        return _params(values)

    def _adopt(self) -> None:
        """The children and params as given; `children=` (bottom-up) is validated at once,
        with DeepEval's DeprecationWarning."""
        self.children = list(self.children)
        self.evaluation_params = self.read_params(self.evaluation_params)
        if self.children:
            _bottom_up(self)
            self.validate()

    def validate(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    @classmethod
    def spec_kwargs(cls, spec: dict[str, Any], label: str) -> dict[str, Any]:
        """A metric file's node spec as constructor keywords (its children come in `link`)."""
        return {"evaluation_params": spec.get("evaluation_params"), "label": label}

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> Any:
        return cls(**cls.spec_kwargs(spec, label))


@dataclass(eq=False)
class VerdictNode(BaseNode):
    """A branch outcome: a `score` (0-10, the metric gives score/10) or a `child` (a node or
    a metric such as GEval), never both. As in DeepEval, a verdict may lead to another
    verdict or be a root: it then passes the walk on unconditionally."""

    verdict: str | bool
    score: float | None = None
    child: Any = None

    def __post_init__(self) -> None:
        if self.score is not None and self.child is not None:
            raise MetricDefinitionError(
                "A VerdictNode can have either a 'score' or a 'child', but not both."
            )
        if self.score is None and self.child is None:
            raise MetricDefinitionError("A VerdictNode must have either a 'score' or a 'child'.")
        if self.score is not None:
            if isinstance(self.score, bool) or not isinstance(self.score, int | float):
                raise MetricTypeError("A VerdictNode's score must be a number.")
            if not 0 <= self.score <= 10:
                raise MetricDefinitionError("The score must be between 0 and 10, inclusive.")
        if self.child is not None:
            from anvil_local.metrics.base import BaseMetric

            if not isinstance(self.child, JudgementNode | TaskNode | VerdictNode | BaseMetric):
                raise MetricTypeError(
                    "A VerdictNode's child must be a node (TaskNode, BinaryJudgementNode, "
                    "NonBinaryJudgementNode, VerdictNode) or a metric such as GEval, "
                    f"got {type(self.child).__name__}."
                )
        if not isinstance(self.verdict, str | bool):
            raise MetricTypeError("A VerdictNode's verdict must be a string or a boolean.")


@register_node(
    "task",
    {
        "instructions",
        "output_label",
        "children",
        "evaluation_params",
        "label",
        "max_tokens",
        "stop",
    },
)
@dataclass(eq=False)
class TaskNode(BaseNode):
    """Extracts text from the case (an LLM call); its output is shown, labelled with
    `output_label`, to every node below it on the walk. `max_tokens` bounds the output
    (default 160) and `stop` ends it at the first of these strings (e.g. a blank line), so a
    small model cannot ramble; a trace marks an output the budget cut."""

    instructions: str
    output_label: str
    children: list[Any] = field(default_factory=list)
    evaluation_params: list[SingleTurnParams] | None = None
    label: str | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None

    #: The top-down builder DeepEval's warning names for `children=` (None: no warning).
    builder: ClassVar[str | None] = "add_node"

    def __post_init__(self) -> None:
        _text(self.instructions, "A TaskNode's 'instructions'")
        _text(self.output_label, "A TaskNode's 'output_label'")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens < 1
        ):
            raise MetricDefinitionError("A TaskNode's 'max_tokens' must be a positive integer")
        if self.stop is not None:
            if isinstance(self.stop, str) or not all(isinstance(x, str) and x for x in self.stop):
                raise MetricDefinitionError("A TaskNode's 'stop' must be a list of strings")
            self.stop = list(self.stop)
        self._adopt()

    def add_node(self, child: Any) -> Any:
        self.children.append(child)
        return child

    def answer(self, asker: Any, visible: Any) -> Any:
        return asker.task(self, visible)

    def to_spec(self, name_of: NameOf) -> dict[str, Any]:
        return {
            "type": self.kind,  # type: ignore[attr-defined]
            "instructions": self.instructions,
            "output_label": self.output_label,
            **({"max_tokens": self.max_tokens} if self.max_tokens is not None else {}),
            **({"stop": self.stop} if self.stop is not None else {}),
            "children": [name_of(c) for c in self.children],
        }

    @classmethod
    def spec_kwargs(cls, spec: dict[str, Any], label: str) -> dict[str, Any]:
        return {
            **super().spec_kwargs(spec, label),
            "instructions": spec.get("instructions"),
            "output_label": spec.get("output_label"),
            "max_tokens": spec.get("max_tokens"),
            "stop": spec.get("stop"),
        }

    def link(self, spec: dict[str, Any], ref: Ref) -> None:
        children = spec.get("children")
        if not isinstance(children, list):
            raise MetricDefinitionError("a task node needs a 'children' list of node ids")
        for child_id in children:
            child = ref(child_id, "'children'")
            if not isinstance(child, TaskNode | JudgementNode):
                raise MetricDefinitionError(
                    f"a task node's child cannot be a metric ({child_id!r})"
                )
            self.children.append(child)

    def validate(self) -> None:
        for child in self.children:
            if isinstance(child, VerdictNode):
                raise MetricDefinitionError(
                    "A TaskNode must not have a VerdictNode as one of their 'children'."
                )
            if not isinstance(child, TaskNode | JudgementNode):
                raise MetricTypeError("A TaskNode's children must be BaseNode instances.")


@dataclass(eq=False)
class JudgementNode(BaseNode):
    """Shared by binary and non-binary judgement nodes: one question, verdict children."""

    step_type: ClassVar[str] = "choice"  # the `type` of its steps in a trace
    verdict_type: ClassVar[type[VerdictNode]] = VerdictNode  # what add_verdict builds
    builder: ClassVar[str | None] = "add_verdict"  # named by the `children=` warning

    criteria: str
    children: list[VerdictNode] = field(default_factory=list)
    evaluation_params: list[SingleTurnParams] | None = None
    label: str | None = None
    #: worked cases shown before the case (metrics.examples); checked against the verdicts
    examples: Any = None
    #: divide the verdict distribution by its content-free prior (metrics.calibration)
    contextual_calibration: bool = False
    #: a yes/no node: the same question asked the other way round ("Is any ... missing?"),
    #: its answers read flipped and averaged with the question's (a lean to Yes cancels)
    negation: str | None = None
    #: a multiple-choice node: ask with the options listed in every rotation, and average (a
    #: lean to a listed position cancels)
    rotate_options: bool = False

    def __post_init__(self) -> None:
        _text(self.criteria, f"A {type(self).__name__}'s 'criteria'")
        self.contextual_calibration = bool(self.contextual_calibration)
        if self.negation is not None:
            self.negation = _text(self.negation, f"A {type(self).__name__}'s 'negation'")
        if not isinstance(self.rotate_options, bool):
            raise MetricDefinitionError("'rotate_options' must be true or false")
        self._adopt()

    def add_verdict(self, verdict: Any, *, score: float | None = None, then: Any = None):
        node = self.verdict_type(verdict=verdict, score=score, child=then)
        self.children.append(node)
        return node

    def answer(self, asker: Any, visible: Any) -> Any:
        return asker.judge(self, visible)

    def to_spec(self, name_of: NameOf) -> dict[str, Any]:
        verdicts = []
        for child in self.children:
            item: dict[str, Any] = {"verdict": child.verdict}
            if child.score is not None:
                item["score"] = child.score
            else:
                item["then"] = name_of(child.child)
            verdicts.append(item)
        spec: dict[str, Any] = {"type": self.kind, "criteria": self.criteria}  # type: ignore[attr-defined]
        if self.examples:
            spec["examples"] = examples_to_list(self.examples, "verdict")
        if self.contextual_calibration:
            spec["contextual_calibration"] = True
        if self.negation is not None:
            spec["negation"] = self.negation
        if self.rotate_options:
            spec["rotate_options"] = True
        spec["verdicts"] = verdicts
        return spec

    @classmethod
    def spec_kwargs(cls, spec: dict[str, Any], label: str) -> dict[str, Any]:
        return {
            **super().spec_kwargs(spec, label),
            "criteria": spec.get("criteria"),
            "examples": spec.get("examples"),
            "contextual_calibration": spec.get("contextual_calibration", False),
            "negation": spec.get("negation"),
            "rotate_options": spec.get("rotate_options", False),
        }

    def check_examples(self, check: Any) -> None:
        """Examples as Example objects, each answer one of this node's verdicts."""
        what = f"{type(self).__name__} {self.label or self.criteria[:40]!r}"
        self.examples = parse_examples(self.examples, "verdict", check, what)

    def link(self, spec: dict[str, Any], ref: Ref) -> None:
        verdicts = spec.get("verdicts")
        if not isinstance(verdicts, list):
            raise MetricDefinitionError("a judgement node needs a 'verdicts' list")
        for item in verdicts:
            if not isinstance(item, dict) or "verdict" not in item:
                raise MetricDefinitionError("each verdict needs a 'verdict' key")
            unknown = sorted(set(item) - {"verdict", "score", "then"})
            if unknown:
                raise MetricDefinitionError(f"unknown verdict field(s): {', '.join(unknown)}")
            child = ref(item["then"], "a verdict's 'then'") if "then" in item else None
            self.children.append(
                self.verdict_type(verdict=item["verdict"], score=item.get("score"), child=child)
            )
        self.validate()

    def options(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def verdict_for(self, option: str) -> VerdictNode:  # pragma: no cover - overridden
        raise NotImplementedError


_JUDGEMENT_FIELDS = {
    "criteria",
    "verdicts",
    "evaluation_params",
    "label",
    "examples",
    "contextual_calibration",
    "negation",
    "rotate_options",
}


@register_node("binary", _JUDGEMENT_FIELDS)
class BinaryJudgementNode(JudgementNode):
    """A yes/no question: exactly one True and one False VerdictNode child."""

    step_type: ClassVar[str] = "binary"

    def validate(self) -> None:
        if len(self.children) != 2:
            raise MetricDefinitionError("BinaryJudgementNode must have exactly 2 children.")
        if not all(isinstance(c, VerdictNode) for c in self.children):
            raise MetricTypeError("All children must be of type VerdictNode.")
        if not all(isinstance(c.verdict, bool) for c in self.children):
            raise MetricDefinitionError(
                "All children BinaryJudgementNode must have a boolean verdict."
            )
        verdicts = [c.verdict for c in self.children]
        if verdicts.count(True) != 1 or verdicts.count(False) != 1:
            raise MetricDefinitionError(
                "BinaryJudgementNode must have one True and one False VerdictNode child."
            )
        if self.rotate_options:
            raise MetricDefinitionError(
                "'rotate_options' is for multiple-choice nodes; a yes/no node debiases with "
                "'negation' (the question asked the other way round)"
            )
        self.check_examples(yes_no_check)

    def options(self) -> list[str]:
        return ["Yes", "No"]

    def verdict_for(self, option: str) -> VerdictNode:
        wanted = option == "Yes"
        return next(c for c in self.children if c.verdict is wanted)


@register_node("non_binary", _JUDGEMENT_FIELDS)
class NonBinaryJudgementNode(JudgementNode):
    """A multiple-choice question: string verdicts, kept in declared order."""

    def validate(self) -> None:
        if not self.children:
            raise MetricDefinitionError("NonBinaryJudgementNode must have at least one child.")
        if not all(isinstance(c, VerdictNode) for c in self.children):
            raise MetricTypeError("All children must be of type VerdictNode.")
        if not all(isinstance(c.verdict, str) for c in self.children):
            raise MetricDefinitionError(
                "The verdict attribute of all NonBinaryJudgementNode children must be a string."
            )
        seen: set[str] = set()
        for child in self.children:
            key = child.verdict.strip()  # type: ignore[union-attr]
            if not key:
                raise MetricDefinitionError("A NonBinaryJudgementNode verdict cannot be empty.")
            if key in seen:
                raise MetricDefinitionError(
                    f"Duplicate verdict found: {child.verdict} in children of "
                    "NonBinaryJudgementNode."
                )
            seen.add(key)
        if self.negation is not None:
            raise MetricDefinitionError(
                "'negation' is for yes/no nodes; a multiple-choice node debiases with "
                "'rotate_options'"
            )
        self.check_examples(option_check(self.options()))

    def options(self) -> list[str]:
        return [c.verdict for c in self.children]  # type: ignore[misc]

    @property
    def _verdict_schema(self) -> Any:
        """DeepEval's pydantic schema of this node's verdicts, there once a graph holding the
        node is built (DeepEval builds it then, so ported code may read it)."""
        if "_verdict_options" not in self.__dict__:
            raise AttributeError("_verdict_schema")
        from anvil_local.metrics.dag.deepeval_model import choice_schema

        return choice_schema(tuple(self.__dict__["_verdict_options"]))

    def verdict_for(self, option: str) -> VerdictNode:
        return next(c for c in self.children if c.verdict == option)


Node = TaskNode | BinaryJudgementNode | NonBinaryJudgementNode | VerdictNode


def is_node(obj: Any) -> bool:
    """Whether `obj` is a graph node (a metric under a verdict is not)."""
    return isinstance(obj, TaskNode | JudgementNode | VerdictNode)
