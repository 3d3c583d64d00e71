"""ConversationalTestCase, Turn and MultiTurnParams: a test case that is a conversation.

Names, fields and values follow DeepEval 4.x, so a conversational metric ports by changing its
imports. A param is either turn-level (each turn's role, content, retrieval context, tools
called) or conversation-level (the scenario, the expected outcome, the chatbot's role, the
context, the user's description). How a conversation is laid out in a prompt lives in
`anvil_local.metrics.conversational.layout`; this module holds the data and its checks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from anvil_local.errors import DataError, MetricDefinitionError, MissingParamError
from anvil_local.testcase import refuse_flags, refuse_images

ROLES = ("user", "assistant")


class MultiTurnParams(Enum):
    """The conversation fields a metric may look at (DeepEval's names and values; its
    metadata, tags, audio and MCP members are not judged here)."""

    ROLE = "role"
    CONTENT = "content"
    SCENARIO = "scenario"
    EXPECTED_OUTCOME = "expected_outcome"
    CONTEXT = "context"
    USER_DESCRIPTION = "user_description"
    RETRIEVAL_CONTEXT = "retrieval_context"
    CHATBOT_ROLE = "chatbot_role"
    TOOLS_CALLED = "tools_called"


#: Params read from each turn, in the order a turn shows them.
TURN_PARAMS: tuple[MultiTurnParams, ...] = (
    MultiTurnParams.ROLE,
    MultiTurnParams.CONTENT,
    MultiTurnParams.RETRIEVAL_CONTEXT,
    MultiTurnParams.TOOLS_CALLED,
)
#: Conversation-level params in prompt order: what many conversations share (the chatbot's
#: role, its context) first, then what belongs to this conversation.
CONVERSATION_ORDER: tuple[MultiTurnParams, ...] = (
    MultiTurnParams.CHATBOT_ROLE,
    MultiTurnParams.CONTEXT,
    MultiTurnParams.USER_DESCRIPTION,
    MultiTurnParams.SCENARIO,
    MultiTurnParams.EXPECTED_OUTCOME,
)
#: Conversation-level params many cases share: prompts put them first and the scheduler
#: groups conversations by them.
SHARED_CONVERSATION_PARAMS: tuple[MultiTurnParams, ...] = CONVERSATION_ORDER[:2]

_TITLES = {
    MultiTurnParams.ROLE: "Role",
    MultiTurnParams.CONTENT: "Content",
    MultiTurnParams.SCENARIO: "Scenario",
    MultiTurnParams.EXPECTED_OUTCOME: "Expected Outcome",
    MultiTurnParams.CONTEXT: "Context",
    MultiTurnParams.USER_DESCRIPTION: "User Description",
    MultiTurnParams.RETRIEVAL_CONTEXT: "Retrieval Context",
    MultiTurnParams.CHATBOT_ROLE: "Chatbot Role",
    MultiTurnParams.TOOLS_CALLED: "Tools Called",
}

#: The keys a conversation's dict (a case file's line) may hold besides metadata.
CONVERSATION_FIELDS = (
    "id",
    "name",
    "turns",
    "scenario",
    "expected_outcome",
    "chatbot_role",
    "context",
    "user_description",
    "comments",
    "tags",
    "metadata",
)
#: DeepEval's camelCase spellings of the same keys (its files use either).
ALIASES = {
    "expectedOutcome": "expected_outcome",
    "chatbotRole": "chatbot_role",
    "userDescription": "user_description",
    "additionalMetadata": "metadata",
}
_TURN_FIELDS = ("role", "content", "retrieval_context", "tools_called", "user_id", "metadata")
_TURN_ALIASES = {
    "retrievalContext": "retrieval_context",
    "toolsCalled": "tools_called",
    "userId": "user_id",
    "additionalMetadata": "metadata",
}


def multi_turn_title(param: MultiTurnParams) -> str:
    """The heading a param gets in prompts ("Expected Outcome")."""
    return _TITLES[param]


def as_multi_turn_param(value: MultiTurnParams | str) -> MultiTurnParams:
    """Accept an enum member, its value ("content") or its name ("CONTENT")."""
    if isinstance(value, MultiTurnParams):
        return value
    if isinstance(value, str):
        key = value.strip()
        for member in MultiTurnParams:
            if key in (member.value, member.name):
                return member
    names = ", ".join(m.value for m in MultiTurnParams)
    raise DataError(f"unknown conversational evaluation param {value!r} (expected one of: {names})")


def ordered_multi_turn(params: list[MultiTurnParams] | tuple[MultiTurnParams, ...]) -> list:
    """Params in prompt order (conversation-level first, then the turns' own), each once."""
    wanted = set(params)
    return [p for p in (*CONVERSATION_ORDER, *TURN_PARAMS) if p in wanted]


def is_turn_param(param: MultiTurnParams) -> bool:
    return param in TURN_PARAMS


def _strings(value: Any, what: str) -> list[str] | None:
    """A list of strings (a single string becomes a list of one), or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{what} must be a list of strings")
    return list(value)


def _text(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise DataError(f"{what} must be a string, got {type(value).__name__}")
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError(f"{what} holds a lone surrogate, not Unicode text") from None
    return value


@dataclass
class Turn:
    """One message of a conversation: who spoke (`role`: "user" or "assistant") and what.
    `retrieval_context` and `tools_called` are what the assistant used for this turn."""

    role: str
    content: str
    retrieval_context: list[str] | None = None
    tools_called: list[str] | None = None
    user_id: str | None = None
    metadata: dict[str, Any] | None = None
    # DeepEval's other keywords: audio refused, the rest kept and never judged
    audio: Any = field(default=None, repr=False, compare=False)
    latency_ms: float | None = field(default=None, repr=False, compare=False)
    interrupted: bool | None = field(default=None, repr=False, compare=False)
    provider_transcript: str | None = field(default=None, repr=False, compare=False)
    mcp_tools_called: list[Any] | None = field(default=None, repr=False, compare=False)
    mcp_resources_called: list[Any] | None = field(default=None, repr=False, compare=False)
    mcp_prompts_called: list[Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        refuse_flags("Turn", audio=self.audio)
        refuse_images("a turn", [self.content, self.retrieval_context])
        if self.role not in ROLES:
            raise DataError(f"a turn's role must be 'user' or 'assistant', got {self.role!r}")
        _text(self.content, "a turn's content")
        if not isinstance(self.content, str):
            raise DataError("a turn needs its content as a string")
        self.retrieval_context = _strings(self.retrieval_context, "a turn's retrieval_context")
        self.tools_called = _strings(self.tools_called, "a turn's tools_called")
        for item in (*(self.retrieval_context or []), *(self.tools_called or [])):
            _text(item, "a turn's field")
        if self.metadata is not None and not isinstance(self.metadata, dict):
            raise DataError("a turn's metadata must be an object")

    def get(self, param: MultiTurnParams) -> str | list[str] | None:
        return getattr(self, param.value)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _TURN_FIELDS if getattr(self, k) is not None}

    @classmethod
    def from_dict(cls, data: Any) -> Turn:
        """A turn from its dict (DeepEval's camelCase keys accepted); unknown keys refused."""
        if isinstance(data, Turn):
            return Turn(**{k: getattr(data, k) for k in _TURN_FIELDS})
        if not isinstance(data, dict):
            raise DataError(f"each turn must be an object with role and content, got {data!r}")
        data = {_TURN_ALIASES.get(k, k): v for k, v in data.items()}
        unknown = sorted(set(data) - set(_TURN_FIELDS))
        if unknown:
            raise DataError(f"unknown turn field(s): {', '.join(unknown)}")
        if "role" not in data or "content" not in data:
            raise DataError("each turn needs a 'role' and a 'content'")
        return cls(**data)


@dataclass
class ConversationalTestCase:
    """A conversation to judge: its turns (at least one), and what it is about."""

    turns: list[Turn]
    scenario: str | None = None
    context: list[str] | None = None
    name: str | None = None
    user_description: str | None = None
    expected_outcome: str | None = None
    chatbot_role: str | None = None
    metadata: dict[str, Any] | None = None
    comments: str | None = None
    tags: list[str] | None = None
    id: str | None = None
    # DeepEval's other keywords: audio and images refused, the rest kept, never judged
    call_recording_path: str | None = field(default=None, repr=False, compare=False)
    flaky: bool = field(default=False, repr=False, compare=False)
    expectations: Any = field(default=None, repr=False, compare=False)
    expected_labels: dict[str, str] | None = field(default=None, repr=False, compare=False)
    mcp_servers: list[Any] | None = field(default=None, repr=False, compare=False)
    multimodal: bool = field(default=False, repr=False, compare=False)
    voice: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        refuse_flags(
            "ConversationalTestCase",
            call_recording_path=self.call_recording_path,
            multimodal=self.multimodal,
            voice=self.voice,
        )
        if not isinstance(self.turns, list) or not self.turns:
            raise DataError("'turns' must be a non-empty list of turns")
        self.turns = [Turn.from_dict(t) for t in self.turns]
        self.context = _strings(self.context, "context")
        for item in self.context or []:
            _text(item, "context")
        for name in ("scenario", "user_description", "expected_outcome", "chatbot_role"):
            _text(getattr(self, name), name)
        self.tags = _strings(self.tags, "tags")

    @property
    def label(self) -> str | None:
        """How the case is named in messages: id, else name."""
        return self.id if self.id is not None else self.name

    def get(self, param: MultiTurnParams) -> str | list[str] | None:
        """A conversation-level param's value (turn-level params live on the turns)."""
        if is_turn_param(param):
            raise ValueError(f"{param.value!r} is read from each turn, not the conversation")
        return getattr(self, param.value)

    def has(self, param: Any) -> bool:
        """Whether the case can show `param`: every turn has a role and content (and may
        lack the optional turn fields); a conversation-level field must be set."""
        if not isinstance(param, MultiTurnParams):
            return False
        if is_turn_param(param):
            return True
        value = self.get(param)
        return value is not None and value != [] and value != ""

    def require(self, params: list[MultiTurnParams], metric: str) -> None:
        """Raise MissingParamError for the first needed field the case lacks."""
        for param in params:
            if not self.has(param):
                raise MissingParamError(metric, self.label, param.value)

    def shared_fields(self) -> list[Any]:
        """The fields many conversations share (what the scheduler groups cases by)."""
        return [getattr(self, p.value) for p in SHARED_CONVERSATION_PARAMS]

    def own_fields(self) -> list[Any]:
        """The rest of what the prompts show, in prompt order (the scheduler sorts by it)."""
        own = [getattr(self, p.value) for p in CONVERSATION_ORDER[2:]]
        return [*own, *(t.to_dict() for t in self.turns)]

    def content_key(self) -> str:
        """sha256 of the judged content (not id/name/tags): the case part of a cache key."""
        payload = {
            "conversation": [t.to_dict() for t in self.turns],
            **{p.value: getattr(self, p.value) for p in CONVERSATION_ORDER},
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in CONVERSATION_FIELDS:
            value = getattr(self, name)
            if name == "turns":
                value = [t.to_dict() for t in self.turns]
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationalTestCase:
        """A conversation from its dict (DeepEval's camelCase keys accepted)."""
        data = {ALIASES.get(k, k): v for k, v in data.items()}
        unknown = sorted(set(data) - set(CONVERSATION_FIELDS))
        if unknown:
            raise DataError(f"unknown conversation field(s): {', '.join(unknown)}")
        return cls(**data)


def check_turn_window(window: Any, what: str = "turn_window") -> tuple[int, int] | None:
    """A turn window as DeepEval writes it: (start, end), 0-based turn indices, both
    inclusive. Checked here for its shape; whether a conversation is long enough is checked
    against each case (`window_fits`)."""
    if window is None:
        return None
    if isinstance(window, str) or not isinstance(window, list | tuple) or len(window) != 2:
        raise MetricDefinitionError(
            f"A '{what}' must have only 2 indices representing start and end, got {window!r}"
        )
    start, end = window
    for value in (start, end):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MetricDefinitionError(
                f"'{what}' indices must be whole numbers from 0, got {window!r}"
            )
    if start > end:
        raise MetricDefinitionError(f"'{what}' start must not be after its end, got {window!r}")
    return (start, end)


def window_fits(window: tuple[int, int] | None, case: ConversationalTestCase) -> bool:
    return window is None or window[1] < len(case.turns)
