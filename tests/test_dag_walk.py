"""The DAG walk on a scripted judge: path, join, the multiple-leaf rule, expected score."""

import pytest

from anvil_local import (
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    LLMTestCase,
    NonBinaryJudgementNode,
    Rubric,
    SingleTurnParams,
    TaskNode,
    VerdictNode,
)
from anvil_local.metrics.dag.metric import judgement_question
from tests.fakes import FakeJudge

OUT = [SingleTurnParams.ACTUAL_OUTPUT]
CASE = LLMTestCase(input="Meeting transcript.", actual_output="Intro\n...\nBody\n...", id="m1")
ORDER_OPTIONS = ("Yes", "Two are out of order", "All out of order")


def headings_dag(extra_task_edge: bool = False) -> DeepAcyclicGraph:
    order = NonBinaryJudgementNode(
        criteria="Are the headings in order?",
        children=[
            VerdictNode("Yes", score=10),
            VerdictNode("Two are out of order", score=4),
            VerdictNode("All out of order", score=2),
        ],
    )
    present = BinaryJudgementNode(
        criteria="Are all three headings present?",
        children=[VerdictNode(False, score=0), VerdictNode(True, child=order)],
    )
    children = [present, order] if extra_task_edge else [present]
    extract = TaskNode(
        instructions="Extract the headings.",
        output_label="Summary headings",
        children=children,
        evaluation_params=OUT,
    )
    return DeepAcyclicGraph([extract])


def judge_for(present=(0.8, 0.2), order=(0.5, 0.3, 0.2)) -> FakeJudge:
    return FakeJudge(
        choices={"present": list(present), "in order": list(order)},
        texts={"Extract": "Intro, Body", "reason": "Because."},
    )


def test_walk_follows_the_most_probable_verdicts_and_records_the_path():
    judge = judge_for(order=(0.2, 0.5, 0.3))
    metric = DAGMetric("Headings", headings_dag())
    assert metric.measure(CASE, judge) == pytest.approx(0.4)
    path = metric.trace.to_dict()["path"]
    assert [s["type"] for s in path] == ["task", "binary", "choice"]
    assert path[0]["output"] == "Intro, Body"
    assert path[1]["verdict"] == "Yes" and path[1]["probabilities"] == {"Yes": 0.8, "No": 0.2}
    assert path[2]["verdict"] == "Two are out of order"
    assert metric.trace.to_dict()["path_probability"] == pytest.approx(0.8 * 0.5)
    assert metric.reason == "Because." and metric.success is False
    assert judge.kinds() == ["generate", "choose", "choose", "generate"]


def test_options_keep_declared_order_and_nodes_share_the_case_prefix():
    judge = judge_for()
    DAGMetric("Headings", headings_dag(), include_reason=False).measure(CASE, judge)
    prompts = [prompt for _, prompt, _ in judge.calls]
    assert judge.calls[2][2] == ORDER_OPTIONS
    case_block = prompts[0].blocks
    for prompt in prompts[1:]:
        assert prompt.blocks[: len(case_block)] == case_block
        assert prompt.blocks[len(case_block)] == "Summary headings:\nIntro, Body\n\n"


def test_judgement_questions_name_the_options_in_declared_order():
    judge = judge_for()
    DAGMetric("Headings", headings_dag(), include_reason=False).measure(CASE, judge)
    binary, choice = judge.calls[1][1].question, judge.calls[2][1].question
    assert binary == "Are all three headings present? (Yes or No)"
    assert choice == (
        "Are the headings in order?\nOptions: Yes; Two are out of order; All out of order."
    )
    done = NonBinaryJudgementNode(
        criteria="Which?", children=[VerdictNode("A", score=1), VerdictNode("B.", score=0)]
    )
    assert judgement_question(done) == "Which?\nOptions: A; B."


def _two_branch_roots(first_score: int, second_score: int) -> list[TaskNode]:
    roots = []
    for name, score in (("claims", first_score), ("facts", second_score)):
        judge_node = BinaryJudgementNode(
            f"Are the {name} supported?",
            children=[VerdictNode(True, score=score), VerdictNode(False, score=0)],
        )
        roots.append(TaskNode(f"List {name}.", name, [judge_node], evaluation_params=OUT))
    return roots


def test_several_scoring_leaves_take_the_lowest_whatever_the_declaration_order():
    for roots in (_two_branch_roots(10, 3), _two_branch_roots(10, 3)[::-1]):
        judge = FakeJudge(choices={"supported": [0.9, 0.1]}, texts={"List": "x"})
        metric = DAGMetric("Two", DeepAcyclicGraph(roots), include_reason=False)
        assert metric.measure(CASE, judge) == pytest.approx(0.3)
        assert sorted(leaf["score"] for leaf in metric.trace.to_dict()["leaves"]) == [0.3, 1.0]
        assert metric.trace.to_dict()["combine"] == "min"


def test_a_node_behind_a_losing_verdict_waits_for_the_edge_that_never_comes():
    # the article's graph: the task node also points at the order node directly; DeepEval
    # counts that edge and the True verdict's, so when headings are missing the order node
    # is never asked and the False leaf alone scores
    for extra_first in (False, True):
        dag = headings_dag(extra_task_edge=True)
        if extra_first:
            dag.root_nodes[0].children.reverse()
            dag = DeepAcyclicGraph(dag.root_nodes)
        assert dag.indegree[dag.root_nodes[0].children[-1 if not extra_first else 0]] == 2
        judge = judge_for(present=(0.1, 0.9), order=(0.9, 0.05, 0.05))
        metric = DAGMetric("Headings", dag, include_reason=False)
        assert metric.measure(CASE, judge) == 0.0
        assert judge.kinds() == ["generate", "choose"]
        assert [leaf["score"] for leaf in metric.trace.to_dict()["leaves"]] == [0.0]
        # with the headings present both edges arrive and the order node runs once
        judge = judge_for(present=(0.9, 0.1), order=(0.9, 0.05, 0.05))
        assert metric.measure(CASE, judge) == 1.0
        assert judge.kinds() == ["generate", "choose", "choose"]


def test_a_walk_that_reaches_no_scoring_verdict_has_no_score_and_says_why():
    # `shared` hangs off verdicts of two judgements; the root's True wins, so `inner` never
    # runs and its edge never arrives (DeepEval's gating): no verdict scores
    shared = NonBinaryJudgementNode(
        "Are the headings in order?",
        children=[VerdictNode("Yes", score=10), VerdictNode("No", score=0)],
        evaluation_params=OUT,
    )
    inner = BinaryJudgementNode(
        "Is it long?", children=[VerdictNode(True, child=shared), VerdictNode(False, score=1)]
    )
    root = BinaryJudgementNode(
        "Are all three headings present?",
        children=[VerdictNode(True, child=shared), VerdictNode(False, child=inner)],
        evaluation_params=OUT,
    )
    metric = DAGMetric("Gated", DeepAcyclicGraph([root]), include_reason=False)
    assert metric.measure(CASE, judge_for(present=(0.9, 0.1))) == 0.0
    assert metric.score is None and metric.success is False
    assert "reached no scoring verdict" in metric.error
    assert metric.trace.to_dict()["leaves"] == []


def test_root_verdicts_and_verdicts_under_verdicts_pass_the_walk_on():
    leaf = VerdictNode(False, score=6)
    judge_node = BinaryJudgementNode(
        "Are all three headings present?",
        children=[VerdictNode(True, child=leaf), VerdictNode(False, score=0)],
        evaluation_params=OUT,
    )
    dag = DeepAcyclicGraph([VerdictNode(True, child=judge_node)])
    metric = DAGMetric("Pass-through", dag, include_reason=False)
    assert metric.measure(CASE, judge_for(present=(0.9, 0.1))) == pytest.approx(0.6)
    assert metric._verbose_steps[-1] == "- verdict False: score 0.60"


def test_join_runs_once_after_all_live_parents_and_sees_both_outputs():
    judge_node = BinaryJudgementNode(
        "Do the two lists agree?",
        children=[VerdictNode(True, score=10), VerdictNode(False, score=3)],
    )
    a = TaskNode("List claims.", "Claims", children=[judge_node], evaluation_params=OUT)
    b = TaskNode("List facts.", "Facts", children=[judge_node], evaluation_params=OUT)
    judge = FakeJudge(choices={"agree": [0.9, 0.1]}, texts={"claims": "c1", "facts": "f1"})
    metric = DAGMetric("Join", DeepAcyclicGraph([a, b]), include_reason=False)
    assert metric.measure(CASE, judge) == 1.0
    assert judge.kinds() == ["generate", "generate", "choose"]
    blocks = judge.calls[2][1].blocks
    assert blocks[-2:] == ("Claims:\nc1\n\n", "Facts:\nf1\n\n")


def test_expected_score_sums_path_probability_times_leaf_score():
    metric = DAGMetric("Headings", headings_dag(), include_reason=False, soft=True)
    metric.measure(CASE, judge_for())
    expected = 0.8 * (0.5 * 1.0 + 0.3 * 0.4 + 0.2 * 0.2) + 0.2 * 0.0
    assert metric.expected_score == pytest.approx(expected)
    assert metric.trace.to_dict()["explored_mass"] == pytest.approx(1.0)
    assert metric.score == 1.0  # the hard walk is unchanged
    assert len(metric.trace.to_dict()["walks"]) == 4


def test_probability_floor_prunes_unlikely_walks_and_renormalises():
    metric = DAGMetric("Headings", headings_dag(), include_reason=False, soft=True, soft_floor=0.2)
    metric.measure(CASE, judge_for())
    mass = 0.8 * 0.5 + 0.8 * 0.3 + 0.2
    assert metric.trace.to_dict()["explored_mass"] == pytest.approx(mass)
    assert metric.expected_score == pytest.approx((0.8 * 0.5 * 1.0 + 0.8 * 0.3 * 0.4) / mass)


def test_a_geval_leaf_keeps_its_steps_rubric_and_strict_mode():
    graded = GEval(
        "Quality",
        evaluation_params=OUT,
        evaluation_steps=["Check the body."],
        rubric=[Rubric((0, 4), "poor"), Rubric((5, 8), "good")],
    )
    strict = GEval("Gate", evaluation_params=OUT, evaluation_steps=["Gate it."], strict_mode=True)
    root = BinaryJudgementNode(
        "Are all three headings present?",
        evaluation_params=OUT,
        children=[VerdictNode(True, child=graded), VerdictNode(False, child=strict)],
    )
    judge = FakeJudge(choices={"present": [0.7, 0.3]}, scores={"Score (": [0.0] * 8 + [1.0]})
    metric = DAGMetric("Mixed", DeepAcyclicGraph([root]), include_reason=False)
    assert metric.measure(CASE, judge) == pytest.approx(1.0)
    kind, prompt, score_range = judge.calls[1]
    assert kind == "score" and score_range == (0, 8)
    definition = prompt.blocks[1]  # G-Eval's prompts open with the definition, then the case
    assert "Check the body." in definition and "5-8: good" in definition
    assert prompt.blocks[-1].startswith("Actual Output:")
    judge = FakeJudge(choices={"present": [0.2, 0.8], "Verdict (": [0.9, 0.1]})
    assert metric.measure(CASE, judge) == 1.0
    assert judge.calls[1][2] == ("Yes", "No")
    assert metric.trace.to_dict()["leaves"][0]["metric"]["metric"] == "Gate"


def test_same_case_same_answers_same_result():
    a = DAGMetric("H", headings_dag(), soft=True)
    b = DAGMetric("H", headings_dag(), soft=True)
    a.measure(CASE, judge_for())
    b.measure(CASE, judge_for())
    assert a.result.to_dict() | {"seconds": 0} == b.result.to_dict() | {"seconds": 0}


def test_decode_check_records_what_a_constrained_decoder_answers():
    judge = judge_for()
    metric = DAGMetric("Headings", headings_dag(), include_reason=False, decode_check=True)
    metric.measure(CASE, judge)
    steps = [s for s in metric.trace.to_dict()["path"] if s["type"] != "task"]
    assert [s["decoded"] for s in steps] == ["No", "All out of order"]  # the fake's answer
    assert [s["verdict"] for s in steps] == [
        "Yes",
        "Yes",
    ]  # verdicts still follow the probabilities
    assert "decode" not in str(metric.to_dict())  # a diagnostic, not part of the definition


def test_verbose_mode_prints_the_path_with_probabilities(capsys):
    metric = DAGMetric("Headings", headings_dag(), verbose_mode=True)
    metric.measure(CASE, judge_for())
    shown = capsys.readouterr().out
    assert "Headings: score 1.000 (threshold 0.5) PASS" in shown
    assert "[task-1] Summary headings: Intro, Body" in shown
    assert "* Yes   0.800" in shown and "No    0.200" in shown
    assert "reason: Because." in shown
