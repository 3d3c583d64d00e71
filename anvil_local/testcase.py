"""LLMTestCase, the param enum, and how a param is rendered into a prompt.

Field names follow DeepEval so a test suite ports by changing imports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from anvil_local.errors import DataError, MissingParamError, UnsupportedFeature

#: How DeepEval marks an image inside a string (an MLLMImage in an f-string).
IMAGE_MARK = "[DEEPEVAL:IMAGE:"
TEXT_ONLY = "this judge reads text only"


@dataclass
class MLLMImage:
    """DeepEval's image, so code that builds one imports; a case that holds one is refused
    ("this judge reads text only"), never judged without its picture."""

    dataBase64: str | None = None  # DeepEval's keyword
    mimeType: str | None = None  # DeepEval's keyword
    url: str | None = None
    local: bool | None = None
    filename: str | None = None
    _id: str | None = None  # DeepEval's registry key; the mark uses the object's identity

    def __str__(self) -> str:
        return f"{IMAGE_MARK}{id(self):x}]"

    def __format__(self, spec: str) -> str:
        return str(self)  # an f-string carries the mark, so the case is refused


def refuse_images(owner: str, values: Any) -> None:
    """UnsupportedFeature when any value (or list item) is an image or carries its mark."""
    items = values if isinstance(values, list | tuple) else [values]
    for item in items:
        if isinstance(item, list | tuple):
            refuse_images(owner, item)
        elif isinstance(item, MLLMImage) or (isinstance(item, str) and IMAGE_MARK in item):
            raise UnsupportedFeature(f"{owner} holds an image: {TEXT_ONLY}")


def refuse_flags(owner: str, **flags: Any) -> None:
    """UnsupportedFeature for DeepEval's multimodal/audio keywords when set."""
    for name, value in flags.items():
        if value not in (None, False):
            raise UnsupportedFeature(f"{owner}: {name}={value!r} is not supported: {TEXT_ONLY}")


@dataclass(frozen=True)
class ToolCall:
    """A tool the system called (or should have): DeepEval's fields. Metrics that judge
    text see it as one line naming the tool and what it was given and returned."""

    name: str
    type: str = "FUNCTION"
    description: str | None = None
    reasoning: str | None = None
    output: Any = None
    input_parameters: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise DataError("a ToolCall needs a non-empty 'name'")
        if self.input_parameters is not None and not isinstance(self.input_parameters, dict):
            raise DataError("a ToolCall's input_parameters must be an object")
        kind = getattr(self.type, "value", self.type)  # DeepEval's ToolCallType enum
        object.__setattr__(self, "type", str(kind))

    def __str__(self) -> str:
        parts = [self.name]
        if self.input_parameters:
            parts.append(f"with {json.dumps(self.input_parameters, sort_keys=True, default=str)}")
        if self.output is not None:
            parts.append(f"returned {json.dumps(self.output, sort_keys=True, default=str)}")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name}
        if self.type != "FUNCTION":
            data["type"] = self.type
        for key in ("description", "reasoning", "output", "input_parameters"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        unknown = sorted(set(data) - {f for f in cls.__dataclass_fields__})
        if unknown:
            raise DataError(f"unknown ToolCall field(s): {', '.join(unknown)}")
        return cls(**data)


def _tool(value: Any, field_name: str) -> ToolCall | str:
    """A tools field's item: a ToolCall, its dict (from JSON), DeepEval's own ToolCall
    (read by its fields), or a bare name."""
    if isinstance(value, ToolCall | str):
        return value
    if isinstance(value, dict):
        return ToolCall.from_dict(value)
    fields = getattr(type(value), "model_fields", None)
    if fields and "name" in fields:
        return ToolCall(**{k: getattr(value, k) for k in ToolCall.__dataclass_fields__})
    raise DataError(f"{field_name} must hold ToolCall objects or names, got {type(value).__name__}")


def _plain(value: Any) -> Any:
    """JSON for a field's value (ToolCalls as their dicts)."""
    if isinstance(value, list):
        return [item.to_dict() if isinstance(item, ToolCall) else item for item in value]
    return value


class SingleTurnParams(Enum):
    """The test-case fields a metric may look at (DeepEval's names and values)."""

    INPUT = "input"
    ACTUAL_OUTPUT = "actual_output"
    EXPECTED_OUTPUT = "expected_output"
    CONTEXT = "context"
    RETRIEVAL_CONTEXT = "retrieval_context"
    TOOLS_CALLED = "tools_called"
    EXPECTED_TOOLS = "expected_tools"


LLMTestCaseParams = SingleTurnParams

#: Prompt order of fields: the parts that are shared by many cases (the document, its
#: context) come before the parts that vary (the output being judged), so cases that share
#: an input share a prompt prefix and the judge prefills it once.
PROMPT_ORDER: tuple[SingleTurnParams, ...] = (
    SingleTurnParams.INPUT,
    SingleTurnParams.CONTEXT,
    SingleTurnParams.RETRIEVAL_CONTEXT,
    SingleTurnParams.EXPECTED_OUTPUT,
    SingleTurnParams.EXPECTED_TOOLS,
    SingleTurnParams.ACTUAL_OUTPUT,
    SingleTurnParams.TOOLS_CALLED,
)

_TITLES = {
    SingleTurnParams.INPUT: "Input",
    SingleTurnParams.ACTUAL_OUTPUT: "Actual Output",
    SingleTurnParams.EXPECTED_OUTPUT: "Expected Output",
    SingleTurnParams.CONTEXT: "Context",
    SingleTurnParams.RETRIEVAL_CONTEXT: "Retrieval Context",
    SingleTurnParams.TOOLS_CALLED: "Tools Called",
    SingleTurnParams.EXPECTED_TOOLS: "Expected Tools",
}

_LIST_FIELDS = {
    SingleTurnParams.CONTEXT,
    SingleTurnParams.RETRIEVAL_CONTEXT,
    SingleTurnParams.TOOLS_CALLED,
    SingleTurnParams.EXPECTED_TOOLS,
}


_TOOL_FIELDS = {SingleTurnParams.TOOLS_CALLED, SingleTurnParams.EXPECTED_TOOLS}


def param_title(param: SingleTurnParams) -> str:
    """The heading a field gets in prompts ("Actual Output")."""
    return _TITLES[param]


def as_param(value: SingleTurnParams | str) -> SingleTurnParams:
    """Accept an enum member, its value ("actual_output") or its name ("ACTUAL_OUTPUT")."""
    if isinstance(value, SingleTurnParams):
        return value
    if isinstance(value, str):
        key = value.strip()
        for member in SingleTurnParams:
            if key in (member.value, member.name):
                return member
    names = ", ".join(m.value for m in SingleTurnParams)
    raise DataError(f"unknown evaluation param {value!r} (expected one of: {names})")


#: Fields many cases share (one article, many summaries): prompts put them first, and the
#: scheduler groups cases by them.
SHARED_PARAMS: tuple[SingleTurnParams, ...] = PROMPT_ORDER[:3]


def ordered_params(params: list[SingleTurnParams] | tuple[SingleTurnParams, ...]) -> list:
    """Params in prompt order, each once."""
    wanted = set(params)
    return [p for p in PROMPT_ORDER if p in wanted]


#: The keys a case's dict may hold.
CASE_FIELDS: tuple[str, ...] = (
    "id",
    "name",
    *(p.value for p in SingleTurnParams),
    "tags",
    "metadata",
)


@dataclass
class LLMTestCase:
    """One thing to judge: DeepEval's fields plus an id, tags and metadata."""

    input: str | None = None
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall | str] | None = None
    expected_tools: list[ToolCall | str] | None = None
    id: str | None = None
    name: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = field(default=None)
    # DeepEval's other keywords: kept, never judged (docs/porting.md)
    comments: str | None = field(default=None, repr=False, compare=False)
    token_cost: float | None = field(default=None, repr=False, compare=False)
    input_token_count: int | None = field(default=None, repr=False, compare=False)
    output_token_count: int | None = field(default=None, repr=False, compare=False)
    completion_time: float | None = field(default=None, repr=False, compare=False)
    flaky: bool = field(default=False, repr=False, compare=False)
    multimodal: bool = field(default=False, repr=False, compare=False)
    mcp_servers: list[Any] | None = field(default=None, repr=False, compare=False)
    mcp_tools_called: list[Any] | None = field(default=None, repr=False, compare=False)
    mcp_resources_called: list[Any] | None = field(default=None, repr=False, compare=False)
    mcp_prompts_called: list[Any] | None = field(default=None, repr=False, compare=False)
    custom_column_key_values: dict[str, str] | None = field(default=None, repr=False, compare=False)
    expectations: Any = field(default=None, repr=False, compare=False)
    expected_labels: dict[str, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        refuse_flags("LLMTestCase", multimodal=self.multimodal)
        refuse_images("LLMTestCase", [getattr(self, p.value) for p in SingleTurnParams])
        for param in _LIST_FIELDS:
            value = getattr(self, param.value)
            if isinstance(value, str):
                setattr(self, param.value, [value])
            elif value is not None and not isinstance(value, list):
                raise DataError(
                    f"{param.value} must be a list of strings, got {type(value).__name__}"
                )
            if param in _TOOL_FIELDS and isinstance(getattr(self, param.value), list):
                setattr(self, param.value, [_tool(v, param.value) for v in value])
        for param in set(SingleTurnParams) - _LIST_FIELDS:
            value = getattr(self, param.value)
            if value is not None and not isinstance(value, str):
                raise DataError(f"{param.value} must be a string, got {type(value).__name__}")
        for param in SingleTurnParams:
            value = getattr(self, param.value)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and not text.isascii():
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        raise DataError(
                            f"{param.value} holds a lone surrogate, not Unicode text"
                        ) from None

    @property
    def label(self) -> str | None:
        """How the case is named in messages: id, else name."""
        return self.id if self.id is not None else self.name

    def get(self, param: SingleTurnParams) -> str | list[str] | None:
        return getattr(self, param.value)

    def has(self, param: object) -> bool:
        """Whether the case has the field, set and not an empty list."""
        if not isinstance(param, SingleTurnParams):
            return False
        value = self.get(param)
        return value is not None and not (isinstance(value, list) and not value)

    def require(self, params: list[SingleTurnParams], metric: str) -> None:
        """Raise MissingParamError for the first needed field the case lacks."""
        for param in params:
            if not self.has(param):
                raise MissingParamError(metric, self.label, param.value)

    def shared_fields(self) -> list[str | list[str] | None]:
        """The fields many cases share (the scheduler groups cases by them)."""
        return [_plain(self.get(p)) for p in SHARED_PARAMS]

    def own_fields(self) -> list[str | list[str] | None]:
        """The fields that follow the shared ones in prompts, in prompt order."""
        return [_plain(self.get(p)) for p in PROMPT_ORDER if p not in SHARED_PARAMS]

    def content_key(self) -> str:
        """sha256 of the judged content (not id/name/tags): the case part of a cache key."""
        payload = {p.value: _plain(self.get(p)) for p in SingleTurnParams}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in CASE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = _plain(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMTestCase:
        """A case from its dict (`to_dict`'s keys); unknown keys are refused."""
        if not isinstance(data, dict):
            raise DataError(f"a test case must be an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(CASE_FIELDS))
        if unknown:
            raise DataError(f"unknown test case field(s): {', '.join(unknown)}")
        return cls(**data)


def present_params(case: LLMTestCase, metric: str) -> list[SingleTurnParams]:
    """Every field the case has, in prompt order: what a metric that names no
    evaluation_params shows (a case with none has nothing to judge)."""
    params = [p for p in PROMPT_ORDER if case.has(p)]
    if not params:
        raise MissingParamError(metric, case.label, "any test-case field")
    return params


def render_param(param: SingleTurnParams, value: str | list[str]) -> str:
    """A field as it appears in a prompt: a heading, then the text."""
    title = param_title(param)
    if isinstance(value, list):
        body = "\n".join(f"- {item}" for item in value)
    else:
        body = value.strip()
    return f"{title}:\n{body}\n\n"
