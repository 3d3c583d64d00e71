"""Export to DeepEval's DAG JSON (`to_deepeval`) and the round trips with `convert`.

DeepEval's shape is the one `deepeval.metrics.dag.serialization.dag_to_dict` writes and
`dag_from_dict` reads; `check_deepeval_shape` below holds the rules that loader enforces, so
these tests catch an export DeepEval would refuse without DeepEval installed.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.dag.metric import DAGMetric
from anvil_local.spec import load_metric, metric_from_dict
from anvil_local.spec.deepeval import convert, is_deepeval_dag, to_deepeval

ROOT = Path(__file__).resolve().parent.parent
DAG_FILES = sorted(
    path
    for path in [
        *(ROOT / "examples").rglob("*.toml"),
        *(ROOT / "benchmarks" / "metrics").glob("*.toml"),
    ]
    if 'type = "dag"' in path.read_text(encoding="utf-8")
    and 'type = "code' not in path.read_text(encoding="utf-8")  # DeepEval has no code nodes
)

# What DeepEval's loader accepts (deepeval 4.3: SingleTurnParams, GEval.__init__).
DEEPEVAL_PARAMS = {
    "input",
    "actual_output",
    "expected_output",
    "context",
    "retrieval_context",
    "metadata",
    "tags",
    "tools_called",
    "expected_tools",
    "mcp_servers",
    "mcp_tools_called",
    "mcp_resources_called",
    "mcp_prompts_called",
}
DEEPEVAL_GEVAL_ARGS = {
    "name",
    "evaluation_params",
    "criteria",
    "evaluation_steps",
    "rubric",
    "model",
    "threshold",
    "top_logprobs",
    "async_mode",
    "strict_mode",
    "verbose_mode",
    "_include_g_eval_suffix",
    "flaky",
    "evaluation_template",
}
TASK_KEYS = ["type", "instructions", "output_label", "label", "evaluation_params", "children"]
JUDGEMENT_KEYS = ["type", "criteria", "label", "evaluation_params", "children"]

# A small metric in our shape: every node kind, score and `then` verdicts, a GEval leaf.
SMALL: dict[str, Any] = {
    "type": "dag",
    "name": "Headings",
    "threshold": 0.5,
    "include_reason": True,
    "strict_mode": False,
    "roots": ["extract"],
    "nodes": {
        "extract": {
            "type": "task",
            "instructions": "List the headings.",
            "output_label": "Headings",
            "children": ["present"],
            "evaluation_params": ["actual_output"],
        },
        "present": {
            "type": "binary",
            "criteria": "Are all three headings there?",
            "verdicts": [{"verdict": False, "score": 0}, {"verdict": True, "then": "order"}],
        },
        "order": {
            "type": "non_binary",
            "criteria": "Are they in order?",
            "verdicts": [
                {"verdict": "Yes", "score": 10},
                {"verdict": "Mostly", "then": "quality"},
                {"verdict": "No", "score": 2},
            ],
            "evaluation_params": ["input", "actual_output"],
        },
        "quality": {
            "type": "geval",
            "name": "Quality",
            "evaluation_params": ["actual_output"],
            "criteria": "Is the summary well written?",
            "threshold": 0.5,
            "strict_mode": False,
            "include_reason": True,
        },
    },
}

# A document in DeepEval's exact shape, as its `DeepAcyclicGraph.to_dict()` writes it: random
# uuid ids, BFS order, `label`/`evaluation_params` present (maybe null), GEval kwargs inline.
DEEPEVAL_DOC: dict[str, Any] = {
    "nodes": {
        "5a0c6a8e-7f9d-4a53-9a39-0d3f1c1c2b11": {
            "type": "TaskNode",
            "instructions": "Extract the headings of the summary.",
            "output_label": "Summary headings",
            "label": "extract",
            "evaluation_params": ["actual_output"],
            "children": ["9b1e2f55-52f4-4f59-8d65-6a1d8f3f2a22"],
        },
        "9b1e2f55-52f4-4f59-8d65-6a1d8f3f2a22": {
            "type": "BinaryJudgementNode",
            "criteria": "Does it have an intro, a body and a conclusion?",
            "label": None,
            "evaluation_params": None,
            "children": [
                "0f4b8c33-1d2e-4c7a-b5a1-3e9f7d6c5b33",
                "7c2d9e44-8a1b-4f3c-9d2e-1a0b9c8d7e44",
            ],
        },
        "0f4b8c33-1d2e-4c7a-b5a1-3e9f7d6c5b33": {
            "type": "VerdictNode",
            "verdict": False,
            "score": 0,
        },
        "7c2d9e44-8a1b-4f3c-9d2e-1a0b9c8d7e44": {
            "type": "VerdictNode",
            "verdict": True,
            "child": {"type": "node", "ref": "e3a1b2c5-6d7e-4f80-9a1b-2c3d4e5f6a55"},
        },
        "e3a1b2c5-6d7e-4f80-9a1b-2c3d4e5f6a55": {
            "type": "NonBinaryJudgementNode",
            "criteria": "Are the headings in the order intro, body, conclusion?",
            "label": "order",
            "evaluation_params": ["input", "actual_output"],
            "children": [
                "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c66",
                "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d77",
                "c3d4e5f6-a7b8-4c9d-0e1f-2a3b4c5d6e88",
            ],
        },
        "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c66": {
            "type": "VerdictNode",
            "verdict": "In order",
            "score": 10,
        },
        "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d77": {
            "type": "VerdictNode",
            "verdict": "One out of place",
            "child": {
                "type": "geval",
                "name": "Heading wording",
                "evaluation_params": ["actual_output"],
                "criteria": "Are the headings worded clearly?",
                "evaluation_steps": None,
                "rubric": None,
                "threshold": 0.7,
                "top_logprobs": 20,
                "async_mode": True,
                "strict_mode": False,
                "verbose_mode": False,
                "_include_g_eval_suffix": True,
                "flaky": False,
            },
        },
        "c3d4e5f6-a7b8-4c9d-0e1f-2a3b4c5d6e88": {
            "type": "VerdictNode",
            "verdict": "All out of order",
            "score": 2,
        },
    }
}


def export_id(metric_name: str, node_id: str, verdict: int | None = None) -> str:
    """The id scheme, restated: uuid5 in a fixed namespace over a JSON key."""
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, "anvil-local:deepeval-dag-export")
    key = [metric_name, node_id] if verdict is None else [metric_name, node_id, verdict]
    return str(uuid.uuid5(namespace, json.dumps(key)))


#: Task-node settings DeepEval's TaskNode has no field for: lost in an export.
NOT_EXPORTED = (
    "max_tokens",
    "stop",
    "examples",
    "contextual_calibration",
    "negation",
    "rotate_options",
)


def graph(data: dict[str, Any]) -> dict[str, Any]:
    """The graph part of a metric dict, less what DeepEval's shape cannot hold."""
    nodes = {
        node_id: {k: v for k, v in spec.items() if k not in NOT_EXPORTED}
        for node_id, spec in data["nodes"].items()
    }
    return {"roots": data["roots"], "nodes": nodes}


def check_deepeval_shape(document: dict[str, Any]) -> list[str]:
    """Assert the rules DeepEval's `dag_from_dict` enforces; return the root ids it would find."""
    assert list(document) == ["nodes"]
    nodes = document["nodes"]
    assert isinstance(nodes, dict) and nodes
    owners: dict[str, list[str]] = {nid: [] for nid in nodes}
    for node_id, spec in nodes.items():
        uuid.UUID(node_id)
        kind = spec["type"]
        assert kind in {"TaskNode", "BinaryJudgementNode", "NonBinaryJudgementNode", "VerdictNode"}
        if kind == "VerdictNode":
            assert ("score" in spec) != ("child" in spec), node_id
            assert set(spec) <= {"type", "verdict", "score", "child"}
            if "score" in spec:
                assert 0 <= spec["score"] <= 10
                continue
            child = spec["child"]
            if child["type"] == "node":
                assert set(child) == {"type", "ref"}
                assert nodes[child["ref"]]["type"] != "VerdictNode"
                owners[child["ref"]].append(node_id)
            else:
                assert child["type"] == "geval"
                assert set(child) - {"type"} <= DEEPEVAL_GEVAL_ARGS
                assert set(child["evaluation_params"]) <= DEEPEVAL_PARAMS
            continue
        assert list(spec) == (TASK_KEYS if kind == "TaskNode" else JUDGEMENT_KEYS)
        assert isinstance(spec["label"], str) and spec["label"]
        assert (
            spec["evaluation_params"] is None or set(spec["evaluation_params"]) <= DEEPEVAL_PARAMS
        )
        for child in spec["children"]:
            wants_verdict = kind != "TaskNode"
            assert (nodes[child]["type"] == "VerdictNode") == wants_verdict, (node_id, child)
            owners[child].append(node_id)
        if kind == "BinaryJudgementNode":
            assert sorted(nodes[c]["verdict"] for c in spec["children"]) == [False, True]
    for node_id, spec in nodes.items():
        if spec["type"] == "VerdictNode":
            # exactly one judgement node lists each verdict among its children
            assert len(owners[node_id]) == 1, node_id
            assert nodes[owners[node_id][0]]["type"].endswith("JudgementNode")
    roots = [nid for nid, refs in owners.items() if not refs]
    assert roots and all(nodes[r]["type"] != "VerdictNode" for r in roots)
    return roots


def test_small_graph_exports_to_the_exact_deepeval_structure():
    document = to_deepeval(SMALL)
    name = "Headings"
    extract, present, order = (export_id(name, n) for n in ("extract", "present", "order"))
    v = {
        (n, i): export_id(name, n, i)
        for n, count in (("present", 2), ("order", 3))
        for i in range(count)
    }
    assert document == {
        "nodes": {
            extract: {
                "type": "TaskNode",
                "instructions": "List the headings.",
                "output_label": "Headings",
                "label": "extract",
                "evaluation_params": ["actual_output"],
                "children": [present],
            },
            present: {
                "type": "BinaryJudgementNode",
                "criteria": "Are all three headings there?",
                "label": "present",
                "evaluation_params": None,
                "children": [v["present", 0], v["present", 1]],
            },
            v["present", 0]: {"type": "VerdictNode", "verdict": False, "score": 0},
            v["present", 1]: {
                "type": "VerdictNode",
                "verdict": True,
                "child": {"type": "node", "ref": order},
            },
            order: {
                "type": "NonBinaryJudgementNode",
                "criteria": "Are they in order?",
                "label": "order",
                "evaluation_params": ["input", "actual_output"],
                "children": [v["order", 0], v["order", 1], v["order", 2]],
            },
            v["order", 0]: {"type": "VerdictNode", "verdict": "Yes", "score": 10},
            v["order", 1]: {
                "type": "VerdictNode",
                "verdict": "Mostly",
                "child": {
                    "type": "geval",
                    "name": "Quality",
                    "evaluation_params": ["actual_output"],
                    "criteria": "Is the summary well written?",
                    "evaluation_steps": None,
                    "threshold": 0.5,
                    "strict_mode": False,
                },
            },
            v["order", 2]: {"type": "VerdictNode", "verdict": "No", "score": 2},
        }
    }
    # Node order is ours, each judgement node followed by its verdicts.
    assert list(document["nodes"]) == [
        extract,
        present,
        v["present", 0],
        v["present", 1],
        order,
        v["order", 0],
        v["order", 1],
        v["order", 2],
    ]
    assert check_deepeval_shape(document) == [extract]
    assert is_deepeval_dag(document)


def test_ids_are_pinned_uuid5():
    """Pinned: a change to the id scheme changes every export, so it must be a decision."""
    ids = list(to_deepeval(SMALL)["nodes"])
    assert ids[0] == "225c39b5-db65-55f7-a28a-3228648dbee2"  # "extract"
    assert ids[3] == "624a76b7-5817-5e1e-8949-11a9f23b8297"  # the second verdict of "present"
    assert all(uuid.UUID(i).version == 5 for i in ids)


def test_export_is_deterministic():
    first = json.dumps(to_deepeval(SMALL, wrapper=True))
    assert json.dumps(to_deepeval(copy.deepcopy(SMALL), wrapper=True)) == first
    # Loading normalises: the same graph declared in another order and without `roots`
    # exports byte-identically.
    shuffled = copy.deepcopy(SMALL)
    del shuffled["roots"]
    shuffled["nodes"] = dict(reversed(list(shuffled["nodes"].items())))
    assert json.dumps(to_deepeval(shuffled, wrapper=True)) == first
    # Ids depend on the metric name, so two metrics never share node ids.
    renamed = {**SMALL, "name": "Other"}
    assert not set(to_deepeval(renamed)["nodes"]) & set(to_deepeval(SMALL)["nodes"])


def test_wrapper_is_deepevals_upload_payload():
    wrapped = to_deepeval(SMALL, wrapper=True)
    assert list(wrapped) == ["name", "algorithm", "multiTurn", "dag"]
    assert wrapped["name"] == "Headings"
    assert wrapped["algorithm"] == "DAG" and wrapped["multiTurn"] is False
    assert wrapped["dag"] == to_deepeval(SMALL)
    assert is_deepeval_dag(wrapped)


def test_ours_to_deepeval_and_back_keeps_the_graph():
    original = metric_from_dict(SMALL).to_dict()
    back = metric_from_dict(convert(to_deepeval(original))).to_dict()
    assert graph(back) == graph(original)
    assert back["name"] == "DAG"  # the bare document has no name ...
    wrapped_back = metric_from_dict(convert(to_deepeval(original, wrapper=True))).to_dict()
    assert wrapped_back == original  # ... the wrapper carries it; the rest here are defaults


def test_deepeval_to_ours_and_back_is_stable():
    first = convert(DEEPEVAL_DOC, name="Headings")
    # a GEval under a verdict is listed just before the judgement node holding the verdict
    assert list(first["nodes"]) == ["extract", "binary-1", "heading-wording", "order"]
    metric = DAGMetric.from_dict(first)
    exported = to_deepeval(metric.to_dict(), wrapper=True)
    check_deepeval_shape(exported["dag"])
    second = convert(exported)
    assert second == first
    # and from there on the export no longer changes, byte for byte
    again = to_deepeval(DAGMetric.from_dict(second).to_dict(), wrapper=True)
    assert json.dumps(again) == json.dumps(exported)

    nodes = exported["dag"]["nodes"]
    by_label = {spec["label"]: (nid, spec) for nid, spec in nodes.items() if "label" in spec}
    assert set(by_label) == {"extract", "binary-1", "order"}
    assert [nodes[c]["type"] for c in by_label["order"][1]["children"]] == ["VerdictNode"] * 3
    wording = nodes[by_label["order"][1]["children"][1]]["child"]
    assert wording == {
        "type": "geval",
        "name": "Heading wording",
        "evaluation_params": ["actual_output"],
        "criteria": "Are the headings worded clearly?",
        "evaluation_steps": None,
        "threshold": 0.7,
        "strict_mode": False,
    }
    yes = nodes[by_label["binary-1"][1]["children"][1]]
    assert yes == {
        "type": "VerdictNode",
        "verdict": True,
        "child": {"type": "node", "ref": by_label["order"][0]},
    }


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_repo_dag_metric_files_round_trip(path: Path, tmp_path: Path):
    original = load_metric(path).to_dict()
    document = to_deepeval(original, wrapper=True)
    check_deepeval_shape(document["dag"])
    back = metric_from_dict(convert(document)).to_dict()
    assert graph(back) == graph(original)
    assert back["name"] == original["name"]
    # a file in DeepEval's shape loads through the ordinary metric loader too
    exported = tmp_path / "exported.json"
    exported.write_text(json.dumps(document), encoding="utf-8")
    loaded = load_metric(exported).to_dict()
    assert graph(loaded) == graph(original) and loaded["name"] == original["name"]


def test_the_repo_has_dag_metric_files():
    assert len(DAG_FILES) >= 2


def test_shared_geval_and_several_roots_survive():
    shared = {
        "type": "dag",
        "name": "Shared",
        "roots": ["second", "first"],
        "nodes": {
            "first": {
                "type": "task",
                "instructions": "Quote the claims.",
                "output_label": "Claims",
                "evaluation_params": ["actual_output"],
                "children": ["check"],
            },
            "second": {
                "type": "task",
                "instructions": "Quote the sources.",
                "output_label": "Sources",
                "evaluation_params": ["ACTUAL_OUTPUT", "context"],
                "children": ["check"],
            },
            "check": {
                "type": "non_binary",
                "criteria": "How well are the claims sourced?",
                "verdicts": [
                    {"verdict": "Well", "then": "judge"},
                    {"verdict": "Partly", "then": "judge"},
                    {"verdict": "Not", "score": 0},
                ],
            },
            "judge": {
                "type": "geval",
                "name": "Judge",
                "evaluation_params": ["actual_output", "context"],
                "evaluation_steps": ["Read.", "Score."],
            },
        },
    }
    original = metric_from_dict(shared).to_dict()
    assert original["roots"] == ["second", "first"]
    document = to_deepeval(shared)
    roots = check_deepeval_shape(document)
    assert [document["nodes"][r]["label"] for r in roots] == ["second", "first"]
    assert document["nodes"][roots[0]]["evaluation_params"] == ["actual_output", "context"]
    imported = convert(document, name="Shared")
    assert [k for k, v in imported["nodes"].items() if v["type"] == "geval"] == ["judge"]
    assert graph(metric_from_dict(imported).to_dict()) == graph(original)


def test_what_deepevals_shape_cannot_carry_is_dropped():
    rich = copy.deepcopy(SMALL)
    rich.update(threshold=0.8, include_reason=False, soft=True, soft_floor=0.05)
    rich["nodes"]["quality"].update(
        include_reason=False,
        rubric=[
            {"score_range": [0, 4], "expected_outcome": "poor"},
            {"score_range": [5, 10], "expected_outcome": "good"},
        ],
    )
    document = to_deepeval(rich, wrapper=True)
    assert "rubric" not in json.dumps(document) and "soft" not in json.dumps(document)
    back = metric_from_dict(convert(document)).to_dict()
    assert back["threshold"] == 0.5 and back["include_reason"] is True and "soft" not in back
    assert "rubric" not in back["nodes"]["quality"] and back["nodes"]["quality"]["include_reason"]
    assert back["nodes"]["order"] == metric_from_dict(rich).to_dict()["nodes"]["order"]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "geval", "name": "G", "evaluation_params": ["input"], "criteria": "c"},
        {"name": "no type", "nodes": {}},
        ["not", "a", "dict"],
    ],
    ids=["geval", "no-type", "list"],
)
def test_non_dag_metrics_are_refused_in_one_line(bad: Any):
    with pytest.raises(MetricDefinitionError) as info:
        to_deepeval(bad)
    assert "DAG" in str(info.value) and "\n" not in str(info.value)


def test_an_invalid_dag_fails_here_not_in_deepeval():
    broken = copy.deepcopy(SMALL)
    broken["nodes"]["present"]["verdicts"][1]["then"] = "missing"
    with pytest.raises(MetricDefinitionError, match="missing"):
        to_deepeval(broken)


def test_import_labels_keep_their_names():
    """An unlabelled node or a verdict never takes the name a labelled node asks for."""
    doc = copy.deepcopy(DEEPEVAL_DOC)
    nodes = doc["nodes"]
    nodes["5a0c6a8e-7f9d-4a53-9a39-0d3f1c1c2b11"]["label"] = None
    nodes["e3a1b2c5-6d7e-4f80-9a1b-2c3d4e5f6a55"]["label"] = "task-1"
    converted = convert(doc)
    assert list(converted["nodes"]) == ["task-2", "binary-1", "heading-wording", "task-1"]
    assert converted["nodes"]["task-1"]["type"] == "non_binary"
    assert all("label" not in spec for spec in converted["nodes"].values())


def test_import_reads_multi_turn_as_conversational_and_refuses_verdict_children():
    """The wrapper's multiTurn flag makes a conversational DAG (its params then must be
    conversation params); a verdict whose child is a verdict is refused."""
    with pytest.raises(MetricDefinitionError, match="conversational evaluation param"):
        # the document names single-turn params, which a conversation does not have
        metric_from_dict(
            convert({"name": "x", "algorithm": "DAG", "multiTurn": True, "dag": DEEPEVAL_DOC})
        )
    assert (
        convert({"name": "x", "algorithm": "DAG", "multiTurn": True, "dag": DEEPEVAL_DOC})["type"]
        == "conversational_dag"
    )
    doc = copy.deepcopy(DEEPEVAL_DOC)
    doc["nodes"]["7c2d9e44-8a1b-4f3c-9d2e-1a0b9c8d7e44"]["child"]["ref"] = (
        "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c66"
    )
    with pytest.raises(MetricDefinitionError, match="as its child"):
        convert(doc)


def test_real_deepeval_loads_the_export(monkeypatch: pytest.MonkeyPatch):
    """Runs only where DeepEval is installed (it is no dependency of ours); offline."""
    pytest.importorskip("deepeval")
    from deepeval.metrics.dag import DeepAcyclicGraph

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")  # GEval builds its default model object
    for source in [SMALL, *(load_metric(p).to_dict() for p in DAG_FILES)]:
        original = metric_from_dict(source).to_dict()
        dag = DeepAcyclicGraph.from_dict(to_deepeval(original))
        assert [root.label for root in dag.root_nodes] == original["roots"]
        back = metric_from_dict(convert(dag.to_dict(), name=original["name"])).to_dict()
        assert graph(back) == graph(original)


def test_a_dag_with_code_nodes_is_refused_by_name():
    metric = load_metric(ROOT / "examples" / "headings.toml")
    with pytest.raises(MetricDefinitionError, match="node 'extract' is a 'code_task' node"):
        to_deepeval(metric.to_dict())


# -- conversational DAGs ---------------------------------------------------------------------

CONVERSATIONAL: dict[str, Any] = {
    "type": "conversational_dag",
    "name": "Refunds",
    "roots": ["asked"],
    "nodes": {
        "asked": {
            "type": "binary",
            "criteria": "Did the assistant ask for the order number first?",
            "turn_window": [0, 3],
            "evaluation_params": ["role", "content"],
            "verdicts": [{"verdict": False, "score": 0}, {"verdict": True, "then": "tone"}],
        },
        "tone": {
            "type": "non_binary",
            "criteria": "How was the tone?",
            "evaluation_params": ["content"],
            "verdicts": [
                {"verdict": "Polite", "score": 10},
                {"verdict": "Curt", "then": "helpful"},
            ],
        },
        "helpful": {
            "type": "conversational_geval",
            "name": "Helpful",
            "evaluation_params": ["expected_outcome", "content", "role"],
            "criteria": "Did it help?",
        },
    },
}


def test_a_conversational_dag_exports_with_its_windows_and_imports_back():
    document = to_deepeval(CONVERSATIONAL, wrapper=True)
    assert document["multiTurn"] is True
    nodes = document["dag"]["nodes"]
    asked = next(spec for spec in nodes.values() if spec.get("label") == "asked")
    assert list(asked) == [*JUDGEMENT_KEYS, "turn_window"] and asked["turn_window"] == [0, 3]
    geval = next(s["child"] for s in nodes.values() if s.get("child", {}).get("type") == "geval")
    assert geval["evaluation_params"] == ["expected_outcome", "content", "role"]
    back = convert(document)
    assert back["type"] == "conversational_dag"
    assert graph(metric_from_dict(back).to_dict()) == graph(
        metric_from_dict(CONVERSATIONAL).to_dict()
    )
    # a bare document is conversational when its params or windows say so
    assert convert(document["dag"], name="Refunds")["type"] == "conversational_dag"
    assert convert(DEEPEVAL_DOC)["type"] == "dag"


def test_a_window_in_a_single_turn_upload_is_refused():
    document = to_deepeval(CONVERSATIONAL, wrapper=True)
    document["multiTurn"] = False
    with pytest.raises(MetricDefinitionError, match="turn_window"):
        convert(document)


def test_the_example_conversational_dag_cannot_export_its_code_nodes():
    metric = load_metric(ROOT / "examples" / "conversations" / "support_dag.toml")
    with pytest.raises(MetricDefinitionError, match="node 'asked_first' is a 'code' node"):
        to_deepeval(metric.to_dict())


def test_real_deepeval_loads_the_conversational_export(monkeypatch: pytest.MonkeyPatch):
    """Runs only where DeepEval is installed (it is no dependency of ours); offline."""
    pytest.importorskip("deepeval")
    from deepeval.metrics.conversational_dag import ConversationalBinaryJudgementNode
    from deepeval.metrics.dag import DeepAcyclicGraph

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    original = metric_from_dict(CONVERSATIONAL).to_dict()
    dag = DeepAcyclicGraph.from_dict(to_deepeval(original), multiturn=True)
    assert isinstance(dag.root_nodes[0], ConversationalBinaryJudgementNode)
    assert dag.root_nodes[0].turn_window == (0, 3)
    back = metric_from_dict(convert(dag.to_dict(), name=original["name"])).to_dict()
    assert graph(back) == graph(original)
