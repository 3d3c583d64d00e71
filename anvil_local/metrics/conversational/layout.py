"""Prompt blocks built from a conversation (pure; shared by every conversational metric).

A conversation is laid out as the fields many conversations share (the chatbot's role, its
context), then this conversation's own fields (user description, scenario, expected
outcome), then a heading and one block per turn. Each turn is its own block, tokenized on its
own, so a turn's tokens are the same whichever window of the conversation a prompt shows,
and a window that starts at the first turn is a prefix of the whole conversation.
"""

from __future__ import annotations

from collections.abc import Iterable

from anvil_local.conversation import (
    CONVERSATION_ORDER,
    SHARED_CONVERSATION_PARAMS,
    ConversationalTestCase,
    MultiTurnParams,
    Turn,
    is_turn_param,
    multi_turn_title,
)
from anvil_local.judge.prompt import HEADER

#: The heading before the turns.
CONVERSATION_HEADING = "Conversation:\n"
#: A turn's heading: its number from 1, and who spoke when the prompt shows roles.
TURN_HEADING = "Turn {number} ({role}):\n"
TURN_HEADING_NO_ROLE = "Turn {number}:\n"
#: How a question names the turns ("the turns of the conversation").
TURNS_PHRASE = "the turns of the conversation"


def _body(value: str | list[str]) -> str:
    if isinstance(value, list):
        return "\n".join(f"- {item}" for item in value)
    return value.strip()


def field_block(param: MultiTurnParams, value: str | list[str]) -> str:
    """A conversation-level field as a prompt shows it: a heading, then the text."""
    return f"{multi_turn_title(param)}:\n{_body(value)}\n\n"


def conversation_fields(
    case: ConversationalTestCase, params: Iterable[MultiTurnParams], shared: bool | None = None
) -> tuple[str, ...]:
    """The conversation-level fields among `params`, in prompt order; `shared` True keeps
    only those many conversations share, False only the conversation's own."""
    wanted = set(params)
    blocks = []
    for param in CONVERSATION_ORDER:
        if param not in wanted:
            continue
        if shared is not None and (param in SHARED_CONVERSATION_PARAMS) != shared:
            continue
        value = case.get(param)
        if value:
            blocks.append(field_block(param, value))
    return tuple(blocks)


def turn_block(number: int, turn: Turn, params: Iterable[MultiTurnParams]) -> str:
    """One turn: its heading, then the turn-level fields the prompt shows."""
    wanted = set(params)
    if MultiTurnParams.ROLE in wanted:
        lines = [TURN_HEADING.format(number=number, role=turn.role)]
    else:
        lines = [TURN_HEADING_NO_ROLE.format(number=number)]
    if MultiTurnParams.CONTENT in wanted:
        lines.append(turn.content.strip() + "\n")
    for param in (MultiTurnParams.RETRIEVAL_CONTEXT, MultiTurnParams.TOOLS_CALLED):
        value = turn.get(param)
        if param in wanted and value:
            lines.append(f"{multi_turn_title(param)}:\n{_body(value)}\n")
    return "".join(lines) + "\n"


def turn_blocks(
    case: ConversationalTestCase,
    params: Iterable[MultiTurnParams],
    window: tuple[int, int] | None = None,
) -> tuple[str, ...]:
    """The heading and the turns of `window` (0-based, both ends included; None: all),
    numbered from 1 as in the whole conversation; nothing when no turn-level param is
    shown."""
    params = list(params)
    if not any(is_turn_param(p) for p in params):
        return ()
    start, end = window if window is not None else (0, len(case.turns) - 1)
    turns = [turn_block(i + 1, case.turns[i], params) for i in range(start, end + 1)]
    return (CONVERSATION_HEADING, *turns)


def conversation_blocks(
    case: ConversationalTestCase,
    params: Iterable[MultiTurnParams],
    window: tuple[int, int] | None = None,
) -> tuple[str, ...]:
    """HEADER, the conversation-level fields, then the turns of `window`: the block every
    node of a conversational DAG reads its question after."""
    params = list(params)
    return (HEADER, *conversation_fields(case, params), *turn_blocks(case, params, window))


def conversation_phrase(params: Iterable[MultiTurnParams]) -> str:
    """ "the Scenario and the turns of the conversation", for use inside a question."""
    params = list(params)
    names = [f"the {multi_turn_title(p)}" for p in CONVERSATION_ORDER if p in params]
    if any(is_turn_param(p) for p in params):
        names.append(TURNS_PHRASE)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
