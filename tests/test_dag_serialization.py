"""DeepEval's DAG serialization API on our classes: shapes, round trips, errors on malformed
input, and, where DeepEval is installed (the `compare` extra), a round trip through its own
`from_dict` / `to_dict` (no model)."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest

import anvil_local
import anvil_local.metrics.dag as dag_module
from anvil_local import (
    BinaryJudgementNode,
    ChildType,
    ConversationalBinaryJudgementNode,
    ConversationalGEval,
    ConversationalNonBinaryJudgementNode,
    ConversationalTaskNode,
    DeepAcyclicGraph,
    GEval,
    MultiTurnParams,
    NodeType,
    NonBinaryJudgementNode,
    SingleTurnParams,
    TaskNode,
    VerdictNode,
    dag_from_dict,
    dag_from_json,
    dag_to_dict,
    dag_to_json,
)
from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.dag.code import CodeNode
from anvil_local.metrics.likelihood import LikelihoodMetric


def single_turn() -> DeepAcyclicGraph:
    extract = TaskNode(
        instructions="List the headings.",
        output_label="Headings",
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        label="extract",
    )
    present = BinaryJudgementNode(criteria="Are all three headings there?")
    extract.add_node(present)
    present.add_verdict(False, score=0)
    order = NonBinaryJudgementNode(
        criteria="Are they in order?",
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
    )
    present.add_verdict(True, then=order)
    order.add_verdict("Yes", score=10)
    quality = GEval(name="Quality", evaluation_params=["actual_output"], criteria="Well written?")
    order.add_verdict("Mostly", then=quality)
    order.add_verdict("No", score=2)
    return DeepAcyclicGraph([extract])


def conversational() -> DeepAcyclicGraph:
    quote = ConversationalTaskNode(
        instructions="Quote the order number.",
        output_label="Order number",
        evaluation_params=[MultiTurnParams.ROLE, MultiTurnParams.CONTENT],
    )
    asked = ConversationalBinaryJudgementNode(
        criteria="Was it asked for first?",
        evaluation_params=[MultiTurnParams.CONTENT],
        turn_window=(0, 2),
    )
    quote.add_node(asked)
    asked.add_verdict(False, score=0)
    tone = ConversationalNonBinaryJudgementNode(criteria="The tone?")
    asked.add_verdict(True, then=tone)
    tone.add_verdict("Polite", score=10)
    tone.add_verdict(
        "Curt",
        then=ConversationalGEval(name="Helpful", evaluation_params=["scenario"], criteria="c"),
    )
    return DeepAcyclicGraph([quote])


def types_in_order(document: dict[str, Any]) -> list[str]:
    return [spec["type"] for spec in document["nodes"].values()]


def test_the_names_are_importable_where_deepeval_has_them():
    for name in ("dag_to_dict", "dag_from_dict", "dag_to_json", "dag_from_json", "NodeType"):
        assert getattr(anvil_local, name) is getattr(dag_module, name)
    assert anvil_local.ChildType is dag_module.ChildType
    assert [t.value for t in NodeType] == [
        "TaskNode",
        "BinaryJudgementNode",
        "NonBinaryJudgementNode",
        "VerdictNode",
    ]
    assert [c.value for c in ChildType] == ["node", "geval", "metric"]
    assert NodeType.TASK == "TaskNode"  # a str enum, as DeepEval's


def test_single_turn_document_shape():
    document = dag_to_dict(single_turn())
    assert list(document) == ["nodes"]
    nodes = list(document["nodes"].items())
    # breadth first from the root; every verdict an entry of its own
    assert types_in_order(document) == [
        "TaskNode",
        "BinaryJudgementNode",
        "VerdictNode",
        "VerdictNode",
        "NonBinaryJudgementNode",
        "VerdictNode",
        "VerdictNode",
        "VerdictNode",
    ]
    for node_id, _ in nodes:
        assert uuid.UUID(node_id).version == 5
    task = nodes[0][1]
    assert task == {
        "type": "TaskNode",
        "instructions": "List the headings.",
        "output_label": "Headings",
        "label": "extract",
        "evaluation_params": ["actual_output"],
        "children": [nodes[1][0]],
    }
    assert nodes[1][1] == {
        "type": "BinaryJudgementNode",
        "criteria": "Are all three headings there?",
        "label": None,
        "evaluation_params": None,
        "children": [nodes[2][0], nodes[3][0]],
    }
    assert nodes[2][1] == {"type": "VerdictNode", "verdict": False, "score": 0}
    assert nodes[3][1] == {
        "type": "VerdictNode",
        "verdict": True,
        "child": {"type": "node", "ref": nodes[4][0]},
    }
    assert nodes[6][1]["child"] == {
        "type": "geval",
        "name": "Quality",
        "evaluation_params": ["actual_output"],
        "criteria": "Well written?",
        "evaluation_steps": None,
        "threshold": 0.5,
        "strict_mode": False,
    }


def test_conversational_document_shape_keeps_turn_windows():
    document = dag_to_dict(conversational())
    specs = list(document["nodes"].values())
    assert specs[1]["turn_window"] == [0, 2]
    assert list(specs[1])[-1] == "turn_window"  # after children, as DeepEval writes it
    assert "turn_window" not in specs[0]
    geval = next(s["child"] for s in specs if s.get("child", {}).get("type") == "geval")
    assert geval["evaluation_params"] == ["scenario", "content", "role"]


@pytest.mark.parametrize("make", [single_turn, conversational], ids=["single", "conversational"])
def test_round_trips_are_exact_and_ids_deterministic(make):
    graph = make()
    document = dag_to_dict(graph)
    multiturn = graph.multiturn
    back = dag_from_dict(document, multiturn=multiturn)
    assert back.multiturn is multiturn
    assert dag_to_dict(back) == document
    assert dag_to_dict(make()) == document  # the same graph, the same ids
    text = dag_to_json(graph)
    assert json.loads(text) == document and text == json.dumps(document, indent=2)
    assert dag_to_json(dag_from_json(text, multiturn=multiturn)) == text
    assert DeepAcyclicGraph.from_json(graph.to_json(), multiturn=multiturn).to_dict() == document
    assert DeepAcyclicGraph.from_dict(document, multiturn=multiturn).to_dict() == graph.to_dict()


def test_ids_differ_between_graphs():
    one, other = dag_to_dict(single_turn()), dag_to_dict(conversational())
    assert not set(one["nodes"]) & set(other["nodes"])


def test_multiturn_picks_the_conversational_classes():
    document = dag_to_dict(conversational())
    graph = dag_from_dict(document, multiturn=True)
    root = graph.root_nodes[0]
    assert type(root) is ConversationalTaskNode
    assert root.children[0].turn_window == (0, 2)
    with pytest.raises(MetricDefinitionError, match="Unknown evaluation_param 'scenario'"):
        dag_from_dict(document)  # read as single-turn, its params are not single-turn ones
    windowed = ConversationalBinaryJudgementNode(criteria="Kind?", turn_window=(0, 1))
    windowed.add_verdict(True, score=10)
    windowed.add_verdict(False, score=0)
    with pytest.raises(MetricDefinitionError, match="load the document with multiturn=True"):
        dag_from_dict(dag_to_dict(DeepAcyclicGraph([windowed])))


def test_a_metric_child_travels_by_class_name():
    node = BinaryJudgementNode(criteria="Fluent?")
    likely = LikelihoodMetric(name="Likely", task="Summarise the Input.")
    node.add_verdict(True, then=likely)
    node.add_verdict(False, score=0)
    document = dag_to_dict(DeepAcyclicGraph([node]))
    child = next(s["child"] for s in document["nodes"].values() if "child" in s)
    assert child["type"] == "metric" and child["metric_class"] == "LikelihoodMetric"
    assert child["kwargs"]["name"] == "Likely"
    back = dag_from_dict(document)
    assert back.metric_children()[0].to_dict() == likely.to_dict()


def test_deepevals_own_geval_arguments_load():
    """What DeepEval writes for a GEval child (its run settings too) loads here."""
    document = dag_to_dict(single_turn())
    for spec in document["nodes"].values():
        if spec.get("child", {}).get("type") == "geval":
            spec["child"].update(
                rubric=None,
                top_logprobs=20,
                async_mode=True,
                verbose_mode=False,
                _include_g_eval_suffix=True,
                flaky=False,
            )
    graph = dag_from_dict(document)
    assert graph.metric_children()[0].name == "Quality"


def test_what_the_document_cannot_hold_is_refused_or_dropped():
    code = CodeNode("regex", {"pattern": "x"}, fields=["actual_output"])
    code.add_verdict(True, score=10)
    code.add_verdict(False, score=0)
    with pytest.raises(MetricDefinitionError, match="Unsupported node class 'CodeNode'"):
        dag_to_dict(DeepAcyclicGraph([code]))
    with pytest.raises(MetricTypeError, match="needs a DeepAcyclicGraph"):
        dag_to_dict({"nodes": {}})
    budget = TaskNode(
        instructions="List.",
        output_label="List",
        max_tokens=40,
        evaluation_params=["actual_output"],
        children=[],
    )
    judged = BinaryJudgementNode(criteria="Ok?")
    judged.add_verdict(True, score=1)
    judged.add_verdict(False, score=0)
    budget.add_node(judged)
    task = next(iter(dag_to_dict(DeepAcyclicGraph([budget]))["nodes"].values()))
    assert "max_tokens" not in task


VALID = dag_to_dict(single_turn())
IDS = list(VALID["nodes"])


def broken(change) -> dict[str, Any]:
    document = copy.deepcopy(VALID)
    change(document["nodes"])
    return document


@pytest.mark.parametrize(
    ("document", "error", "message"),
    [
        pytest.param([], MetricDefinitionError, "expected a top-level object", id="not-dict"),
        pytest.param({}, MetricDefinitionError, "with a 'nodes' key", id="no-nodes"),
        pytest.param({"nodes": {}}, MetricDefinitionError, "must be a non-empty", id="empty"),
        pytest.param(
            broken(lambda n: n[IDS[0]].pop("type")),
            MetricDefinitionError,
            f"Node '{IDS[0]}' is missing required 'type' field.",
            id="no-type",
        ),
        pytest.param(
            broken(lambda n: n[IDS[0]].update(type="Task")),
            MetricDefinitionError,
            f"Node '{IDS[0]}' has unknown type 'Task'. Expected one of: TaskNode,",
            id="unknown-type",
        ),
        pytest.param(
            broken(lambda n: n[IDS[0]].update(children=["nowhere"])),
            MetricDefinitionError,
            "Reference to unknown node id 'nowhere'.",
            id="unknown-ref",
        ),
        pytest.param(
            broken(lambda n: n[IDS[4]]["children"].append(IDS[0])),
            MetricDefinitionError,
            "No root nodes detected",
            id="no-root",
        ),
        pytest.param(
            broken(lambda n: n[IDS[2]].pop("score")),
            MetricDefinitionError,
            "VerdictNode spec must have either 'score' or 'child'.",
            id="empty-verdict",
        ),
        pytest.param(
            broken(lambda n: n[IDS[3]].update(child="x")),
            MetricDefinitionError,
            "VerdictNode 'child' must be an object with a 'type' field.",
            id="child-not-object",
        ),
        pytest.param(
            broken(lambda n: n[IDS[3]].update(child={"type": "graph"})),
            MetricDefinitionError,
            "VerdictNode child has unknown type 'graph'. Expected one of: node, geval, metric.",
            id="child-type",
        ),
        pytest.param(
            broken(lambda n: n[IDS[3]].update(child={"type": "node"})),
            MetricDefinitionError,
            "VerdictNode child of type 'node' requires 'ref'.",
            id="child-no-ref",
        ),
        pytest.param(
            broken(lambda n: n[IDS[0]].update(evaluation_params=["answer"])),
            MetricDefinitionError,
            "Unknown evaluation_param 'answer'. Expected one of: input,",
            id="param",
        ),
        pytest.param(
            broken(lambda n: n[IDS[6]].update(child={"type": "metric"})),
            MetricDefinitionError,
            "Metric child requires a non-empty 'metric_class' field.",
            id="metric-no-class",
        ),
        pytest.param(
            broken(lambda n: n[IDS[6]].update(child={"type": "metric", "metric_class": "Bias"})),
            MetricDefinitionError,
            "Unknown metric_class 'Bias'.",
            id="metric-class",
        ),
        pytest.param(
            broken(lambda n: n[IDS[6]]["child"].update(temperature=0)),
            MetricTypeError,
            "GEval got an unexpected keyword argument 'temperature'",
            id="geval-argument",
        ),
        pytest.param(
            broken(lambda n: n[IDS[0]].pop("instructions")),
            MetricDefinitionError,
            f"Node '{IDS[0]}' (TaskNode) is missing 'instructions'.",
            id="no-instructions",
        ),
        pytest.param(
            broken(lambda n: n[IDS[2]].update(score=11)),
            MetricDefinitionError,
            "The score must be between 0 and 10, inclusive.",
            id="score-range",
        ),
        pytest.param(
            broken(lambda n: n[IDS[1]]["children"].pop()),
            MetricDefinitionError,
            "BinaryJudgementNode must have exactly 2 children.",
            id="binary-children",
        ),
    ],
)
def test_malformed_documents_raise_deepevals_errors(document, error, message):
    with pytest.raises(error) as info:
        dag_from_dict(document)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError | TypeError)  # what DeepEval's callers catch


def test_a_cycle_anywhere_is_refused():
    def loop(nodes):
        # the NonBinary node's "Yes" verdict leads back to the binary node
        nodes[IDS[5]].pop("score")
        nodes[IDS[5]]["child"] = {"type": "node", "ref": IDS[1]}

    with pytest.raises(MetricDefinitionError, match="Cycle detected in JSON refs"):
        dag_from_dict(broken(loop))


def test_a_long_chain_round_trips_without_recursion():
    leaf = BinaryJudgementNode(criteria="Last?")
    leaf.add_verdict(True, score=10)
    leaf.add_verdict(False, score=0)
    node = leaf
    for i in range(1500):
        parent = BinaryJudgementNode(criteria=f"Step {i}?")
        parent.add_verdict(True, then=node)
        parent.add_verdict(False, score=0)
        node = parent
    document = dag_to_dict(DeepAcyclicGraph([node]))
    assert dag_to_dict(dag_from_dict(document)) == document


def test_verdict_node_classes_come_from_the_mode():
    document = dag_to_dict(conversational())
    graph = dag_from_dict(document, multiturn=True)
    verdicts = [n for n in graph.order if isinstance(n, VerdictNode)]
    assert verdicts and all(type(v).__name__ == "ConversationalVerdictNode" for v in verdicts)


# -- DeepEval itself (the `compare` extra) ---------------------------------------------------


@pytest.mark.parametrize("make", [single_turn, conversational], ids=["single", "conversational"])
def test_round_trip_through_deepevals_own_classes(make, monkeypatch: pytest.MonkeyPatch):
    """Our document -> DeepEval's from_dict -> DeepEval's to_dict -> ours: the same graph,
    the same document byte for byte (our ids are content-based, DeepEval's order is ours).
    Runs only where DeepEval is installed (it is no dependency of ours); offline."""
    pytest.importorskip("deepeval")
    from deepeval.metrics.dag import DeepAcyclicGraph as TheirGraph

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")  # GEval builds its default model object
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    graph = make()
    document = dag_to_dict(graph)
    theirs = TheirGraph.from_dict(document, multiturn=graph.multiturn)
    assert theirs.multiturn is graph.multiturn
    back = dag_from_dict(theirs.to_dict(), multiturn=graph.multiturn)
    assert dag_to_dict(back) == document
