"""Conversations as test cases: DeepEval's fields and rules, case files, and the prompt
blocks a conversation becomes (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local import ConversationalTestCase, MultiTurnParams, Turn
from anvil_local.arena import ArenaTestCase, Contestant
from anvil_local.conversation import check_turn_window, window_fits
from anvil_local.errors import DataError, MetricDefinitionError, MissingParamError
from anvil_local.judge.prompt import HEADER
from anvil_local.metrics.conversational.layout import (
    conversation_blocks,
    conversation_phrase,
    turn_blocks,
)
from anvil_local.run.dataset import case_from_dict, read_cases, rows_from_cases
from anvil_local.run.schedule import group_by_prefix, own_key, prefix_key
from anvil_local.testcase import LLMTestCase, SingleTurnParams

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "conversations" / "support.jsonl"

P = MultiTurnParams


def chat(*contents: str, **fields) -> ConversationalTestCase:
    roles = ["user", "assistant"]
    turns = [Turn(role=roles[i % 2], content=c) for i, c in enumerate(contents)]
    return ConversationalTestCase(turns=turns, **fields)


def test_deepevals_fields_and_values():
    assert [p.value for p in MultiTurnParams] == [
        "role",
        "content",
        "scenario",
        "expected_outcome",
        "context",
        "user_description",
        "retrieval_context",
        "chatbot_role",
        "tools_called",
    ]
    case = ConversationalTestCase(
        turns=[{"role": "user", "content": "Hi"}, Turn(role="assistant", content="Hello")],
        scenario="s",
        expected_outcome="e",
        chatbot_role="r",
        context="one fact",
    )
    assert case.turns[0] == Turn(role="user", content="Hi")
    assert case.context == ["one fact"]
    assert case.get(P.SCENARIO) == "s"
    with pytest.raises(ValueError, match="each turn"):
        case.get(P.CONTENT)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"turns": []}, "non-empty list", id="no-turns"),
        pytest.param({"turns": [{"role": "system", "content": "x"}]}, "'user' or", id="role"),
        pytest.param({"turns": [{"role": "user"}]}, "'role' and a 'content'", id="no-content"),
        pytest.param({"turns": [{"role": "user", "content": 3}]}, "string", id="content-type"),
        pytest.param(
            {"turns": [{"role": "user", "content": "x", "mood": "ok"}]}, "mood", id="turn-key"
        ),
        pytest.param(
            {"turns": [{"role": "user", "content": "x"}], "scenario": 3}, "scenario", id="scenario"
        ),
    ],
)
def test_bad_conversations_are_one_line_errors(kwargs, message):
    with pytest.raises(DataError, match=message):
        ConversationalTestCase(**kwargs)


def test_has_and_require():
    case = chat("Hi", "Hello", scenario="greeting")
    assert case.has(P.CONTENT) and case.has(P.ROLE) and case.has(P.RETRIEVAL_CONTEXT)
    assert case.has(P.SCENARIO) and not case.has(P.EXPECTED_OUTCOME)
    assert not case.has(SingleTurnParams.INPUT)
    with pytest.raises(MissingParamError, match="expected_outcome"):
        case.require([P.EXPECTED_OUTCOME], "m")


def test_dict_round_trip_and_camel_case_aliases():
    case = ConversationalTestCase.from_dict(
        {
            "id": "c1",
            "turns": [{"role": "user", "content": "Hi", "retrievalContext": ["doc"]}],
            "expectedOutcome": "greeted",
            "chatbotRole": "helper",
        }
    )
    assert case.expected_outcome == "greeted" and case.chatbot_role == "helper"
    assert case.turns[0].retrieval_context == ["doc"]
    again = case_from_dict(case.to_dict())
    assert again == case
    assert again.content_key() == case.content_key()
    assert chat("Hi").content_key() != chat("Hello").content_key()
    # the id and tags are not content
    assert chat("Hi", id="a", tags=["x"]).content_key() == chat("Hi", id="b").content_key()


def test_case_files_hold_conversations_arenas_and_single_turn_cases(tmp_path: Path):
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"id": "s", "input": "q", "actual_output": "a"},
        {
            "id": "c",
            "turns": [{"role": "user", "content": "Hi"}],
            "chatbotRole": "helper",
            "labels": {"ok": 1},
        },
        {
            "id": "a",
            "contestants": [
                {"name": "x", "test_case": {"input": "q", "actual_output": "1"}},
                {"name": "y", "test_case": {"input": "q", "actual_output": "2"}},
            ],
            "labels": {"preferred": "y"},
            "doc": "d1",
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    found = read_cases(path)
    assert [type(r.case).__name__ for r in found] == [
        "LLMTestCase",
        "ConversationalTestCase",
        "ArenaTestCase",
    ]
    assert found[1].case.chatbot_role == "helper"
    assert found[1].case.metadata == {"labels": {"ok": 1}}
    assert found[2].case.metadata == {"labels": {"preferred": "y"}, "doc": "d1"}


def test_a_bad_conversation_line_names_its_line(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "c", "turns": [{"role": "bot", "content": "x"}]}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: .*role"):
        read_cases(path)


def test_the_example_conversations_read():
    rows = read_cases(SUPPORT)
    assert len(rows) == 6
    assert all(isinstance(r.case, ConversationalTestCase) for r in rows)
    assert all(r.case.metadata and "intended" in r.case.metadata for r in rows)


def test_python_cases_of_every_kind_become_rows():
    arena = ArenaTestCase(
        contestants=[
            Contestant("x", LLMTestCase(input="q", actual_output="1")),
            Contestant("y", LLMTestCase(input="q", actual_output="2")),
        ]
    )
    rows = rows_from_cases([LLMTestCase(input="q"), chat("Hi"), arena])
    assert [r.case_id for r in rows] == ["case-1", "case-2", "case-3"]
    with pytest.raises(DataError, match="not an LLMTestCase"):
        rows_from_cases(["text"])


def test_conversations_are_grouped_by_chatbot_role_and_context():
    rows = rows_from_cases(
        [
            chat("Hi", chatbot_role="shop"),
            chat("Hello", chatbot_role="bank"),
            chat("Hey", chatbot_role="shop", scenario="x"),
        ]
    )
    groups = group_by_prefix(rows)
    assert [[r.case_id for r in g] for g in groups] == [["case-1", "case-3"], ["case-2"]]
    assert prefix_key(rows[0]) == json.dumps(["shop", None])
    assert own_key(rows[0])[-1] == json.dumps({"role": "user", "content": "Hi"})


def test_single_turn_keys_are_unchanged():
    """Shards hash the prefix key: a single-turn case's key must not move."""
    rows = rows_from_cases([LLMTestCase(input="doc", context=["c"], actual_output="s")])
    assert prefix_key(rows[0]) == json.dumps(["doc", ["c"], None])
    assert own_key(rows[0]) == ("null", "null", '"s"', "null")


# -- arenas -------------------------------------------------------------------------------


def test_arena_rules_are_deepevals():
    one = Contestant("x", LLMTestCase(input="q", actual_output="1"))
    with pytest.raises(DataError, match="unique"):
        ArenaTestCase(contestants=[one, Contestant("x", LLMTestCase(input="q"))])
    with pytest.raises(DataError, match="same 'input'"):
        ArenaTestCase(contestants=[one, Contestant("y", LLMTestCase(input="other"))])
    with pytest.raises(DataError, match="same 'expected_output'"):
        ArenaTestCase(
            contestants=[one, Contestant("y", LLMTestCase(input="q", expected_output="e"))]
        )
    with pytest.raises(DataError, match="at least two"):
        ArenaTestCase(contestants=[one])
    arena = ArenaTestCase(
        contestants=[one, {"name": "y", "test_case": {"input": "q", "actual_output": "2"}}]
    )
    assert arena.names == ["x", "y"]
    assert case_from_dict(arena.to_dict()) == arena


# -- turn windows -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "window",
    [(1,), (2, 1), (-1, 2), (0.5, 2), "0,1", (True, 2)],
    ids=["one-index", "reversed", "negative", "float", "string", "bool"],
)
def test_bad_turn_windows_are_definition_errors(window):
    with pytest.raises(MetricDefinitionError, match="turn_window"):
        check_turn_window(window)


def test_turn_windows_are_inclusive_and_may_be_one_turn():
    assert check_turn_window([0, 1]) == (0, 1)
    assert check_turn_window((2, 2)) == (2, 2)  # one turn (DeepEval refuses start == end)
    case = chat("a", "b", "c")
    assert window_fits((1, 2), case) and not window_fits((1, 3), case)


# -- layout --------------------------------------------------------------------------------


def test_a_conversation_as_blocks():
    case = chat("Hi, my kettle broke.", "Sorry! Your order number?", scenario="A broken kettle.")
    case.turns[1].retrieval_context = ["Refund policy: 30 days."]
    params = [P.SCENARIO, P.ROLE, P.CONTENT, P.RETRIEVAL_CONTEXT]
    assert conversation_blocks(case, params) == (
        HEADER,
        "Scenario:\nA broken kettle.\n\n",
        "Conversation:\n",
        "Turn 1 (user):\nHi, my kettle broke.\n\n",
        "Turn 2 (assistant):\nSorry! Your order number?\n"
        "Retrieval Context:\n- Refund policy: 30 days.\n\n",
    )
    # without the role, turns are numbered only; without any turn field, no turns at all
    assert turn_blocks(case, [P.CONTENT])[1] == "Turn 1:\nHi, my kettle broke.\n\n"
    assert turn_blocks(case, [P.SCENARIO]) == ()


def test_a_window_from_the_first_turn_is_a_prefix_of_the_whole_conversation():
    case = chat("a", "b", "c", "d")
    params = [P.ROLE, P.CONTENT]
    whole = conversation_blocks(case, params)
    assert conversation_blocks(case, params, (0, 1)) == whole[:4]
    middle = conversation_blocks(case, params, (2, 3))
    assert middle[-2:] == whole[-2:]  # the same turn, the same block (its number included)
    assert middle[-2].startswith("Turn 3 (user)")


def test_conversation_phrase():
    assert conversation_phrase([P.ROLE, P.CONTENT]) == "the turns of the conversation"
    assert (
        conversation_phrase([P.CONTENT, P.EXPECTED_OUTCOME, P.SCENARIO])
        == "the Scenario, the Expected Outcome and the turns of the conversation"
    )


def test_worker_processes_receive_every_kind_of_case():
    from anvil_local.run.executors.pool import group_from_wire, group_to_wire
    from anvil_local.run.plan import WorkItem

    arena = ArenaTestCase(
        contestants=[
            Contestant("x", LLMTestCase(input="q", actual_output="1")),
            Contestant("y", LLMTestCase(input="q", actual_output="2")),
        ],
        id="a",
    )
    rows = rows_from_cases([chat("Hi", "Hello", scenario="s", id="c"), arena])
    group = [WorkItem(row, (0,)) for row in rows]
    back = group_from_wire(group_to_wire(group))
    assert [item.row.case for item in back] == [row.case for row in rows]
