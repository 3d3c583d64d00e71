"""Every DAG validation rule, with DeepEval's exception types and messages."""

import pytest

from anvil_local import (
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    NonBinaryJudgementNode,
    SingleTurnParams,
    TaskNode,
    VerdictNode,
)

OUT = [SingleTurnParams.ACTUAL_OUTPUT]


def binary(**kw):
    children = kw.pop("children", [VerdictNode(True, score=10), VerdictNode(False, score=0)])
    return BinaryJudgementNode(
        criteria="Is it good?", children=children, evaluation_params=OUT, **kw
    )


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        pytest.param(
            lambda: BinaryJudgementNode("Q?", children=[VerdictNode(True, score=1)]),
            ValueError,
            "BinaryJudgementNode must have exactly 2 children.",
            id="binary-count",
        ),
        pytest.param(
            lambda: BinaryJudgementNode(
                "Q?", children=[VerdictNode(True, score=1), VerdictNode(True, score=2)]
            ),
            ValueError,
            "one True and one False",
            id="binary-two-true",
        ),
        pytest.param(
            lambda: BinaryJudgementNode(
                "Q?", children=[VerdictNode("yes", score=1), VerdictNode(False, score=2)]
            ),
            ValueError,
            "must have a boolean verdict",
            id="binary-string-verdict",
        ),
        pytest.param(
            lambda: BinaryJudgementNode(
                "Q?", children=[VerdictNode(True, score=1), TaskNode("x", "y", [binary()])]
            ),
            TypeError,
            "All children must be of type VerdictNode.",
            id="binary-non-verdict",
        ),
        pytest.param(
            lambda: NonBinaryJudgementNode("Q?", children=[VerdictNode(True, score=1)]),
            ValueError,
            "must be a string",
            id="nonbinary-bool",
        ),
        pytest.param(
            lambda: NonBinaryJudgementNode(
                "Q?", children=[VerdictNode("A", score=1), VerdictNode("A", score=2)]
            ),
            ValueError,
            "Duplicate verdict found: A",
            id="nonbinary-duplicate",
        ),
        pytest.param(
            lambda: VerdictNode("A", score=1, child=binary()),
            ValueError,
            "either a 'score' or a 'child', but not both",
            id="verdict-both",
        ),
        pytest.param(
            lambda: VerdictNode("A"),
            ValueError,
            "must have either a 'score' or a 'child'",
            id="verdict-neither",
        ),
        pytest.param(
            lambda: VerdictNode("A", score=11),
            ValueError,
            "The score must be between 0 and 10, inclusive.",
            id="verdict-score-range",
        ),
        pytest.param(
            lambda: VerdictNode("A", child="not a node"),
            TypeError,
            "child must be a node",
            id="verdict-child-type",
        ),
        pytest.param(
            lambda: TaskNode("x", "y", children=[VerdictNode(True, score=1)]),
            ValueError,
            "must not have a VerdictNode",
            id="task-verdict-child",
        ),
        pytest.param(
            lambda: TaskNode("x", "y", children=["text"]),
            TypeError,
            "must be BaseNode instances",
            id="task-child-type",
        ),
        pytest.param(
            lambda: DeepAcyclicGraph([binary(), binary()]),
            ValueError,
            "more than one root node",
            id="two-judgement-roots",
        ),
        pytest.param(
            lambda: DeepAcyclicGraph([TaskNode("x", "y", evaluation_params=OUT), binary()]),
            ValueError,
            "more than one root node",
            id="task-and-judgement-roots",
        ),
        pytest.param(lambda: DeepAcyclicGraph([]), ValueError, "at least one root", id="no-roots"),
    ],
)
def test_rule(build, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_root_reachable_from_another_root_is_rejected():
    shared = binary()
    a = TaskNode("a", "A", children=[shared], evaluation_params=OUT)
    b = TaskNode("b", "B", children=[a], evaluation_params=OUT)
    with pytest.raises(ValueError, match="reachable from another root"):
        DeepAcyclicGraph([b, a])


def test_cycles_are_rejected():
    top = NonBinaryJudgementNode("Q1?", evaluation_params=OUT)
    below = NonBinaryJudgementNode("Q2?")
    top.add_verdict("go", then=below)
    below.add_verdict("back", then=top)
    with pytest.raises(ValueError, match=r"Cycle detected in DAG graph\."):
        DeepAcyclicGraph([top])


def test_top_down_builder_is_validated_when_the_graph_is_built():
    root = BinaryJudgementNode("Q?", evaluation_params=OUT)
    root.add_verdict(True, score=10)
    with pytest.raises(ValueError, match="exactly 2 children"):
        DeepAcyclicGraph([root])
    root.add_verdict(False, score=0)
    assert len(DeepAcyclicGraph([root]).order) == 3


def test_a_dag_where_no_node_sees_the_case_is_rejected():
    with pytest.raises(ValueError, match="no node would see the test case"):
        DAGMetric(
            "m",
            DeepAcyclicGraph(
                [
                    BinaryJudgementNode(
                        "Q?", children=[VerdictNode(True, score=10), VerdictNode(False, score=0)]
                    )
                ]
            ),
        )


def test_a_geval_child_is_accepted_and_kept_whole():
    geval = GEval("Quality", evaluation_params=OUT, evaluation_steps=["Look."], strict_mode=True)
    node = binary(children=[VerdictNode(True, child=geval), VerdictNode(False, score=0)])
    dag = DeepAcyclicGraph([node])
    assert dag.metric_children() == [geval]
    assert geval.threshold == 1.0 and geval.evaluation_steps == ["Look."]


def test_deepeval_shapes_build_and_a_childless_task_node_is_logged(caplog):
    # DeepEval allows a verdict root, a verdict under a verdict and a TaskNode leaf
    DeepAcyclicGraph([VerdictNode(True, score=1)])
    leaf = VerdictNode(True, score=4)
    DeepAcyclicGraph(
        [BinaryJudgementNode("ok?", [VerdictNode(True, child=leaf), VerdictNode(False, score=0)])]
    )
    with caplog.at_level("WARNING"):
        DeepAcyclicGraph([TaskNode("x", "lonely", evaluation_params=OUT)])
    assert "'lonely' has no children" in caplog.text


def test_a_metric_file_refuses_a_root_verdict_in_one_line():
    from anvil_local.metrics.dag.codec import graph_to_spec

    dag = DeepAcyclicGraph([VerdictNode(True, child=binary())])
    with pytest.raises(ValueError, match="holds verdicts only under judgement nodes"):
        graph_to_spec(dag)


def test_non_binary_verdict_schema_exists_once_a_graph_is_built():
    order = NonBinaryJudgementNode(criteria="order?")
    order.add_verdict("A", score=10)
    order.add_verdict("B", score=0)
    assert not hasattr(order, "_verdict_schema")
    DeepAcyclicGraph([order])
    assert order._verdict_options == ["A", "B"]
    assert order._verdict_schema(verdict="B", reason="r").verdict == "B"
