"""Conversational DAGs and ConversationalGEval: graph rules, metric files, walks and prompts
with the fake judge (no model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local import (
    BinaryJudgementNode,
    ConversationalBinaryJudgementNode,
    ConversationalDAGMetric,
    ConversationalGEval,
    ConversationalNonBinaryJudgementNode,
    ConversationalTaskNode,
    ConversationalTestCase,
    ConversationalVerdictNode,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    MultiTurnParams,
    Turn,
    evaluate,
    load_metric,
)
from anvil_local.cli import main
from anvil_local.errors import DataError, MetricDefinitionError, MetricFileError
from anvil_local.judge.prompt import HEADER
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.conversational import ConversationalCodeNode
from anvil_local.run.dataset import read_cases
from anvil_local.spec import metric_from_dict
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "conversations"
P = MultiTurnParams


def chat(*contents: str, **fields) -> ConversationalTestCase:
    roles = ["user", "assistant"]
    turns = [Turn(role=roles[i % 2], content=c) for i, c in enumerate(contents)]
    return ConversationalTestCase(turns=turns, **fields)


def polite_graph(window=None) -> DeepAcyclicGraph:
    node = ConversationalBinaryJudgementNode(
        criteria="Was the assistant polite?", evaluation_params=[P.ROLE, P.CONTENT]
    )
    node.add_verdict(True, score=10)
    follow = node.add_verdict(False, then=_opening(window))
    assert isinstance(follow, ConversationalVerdictNode)
    return DeepAcyclicGraph([node])


def _opening(window):
    node = ConversationalBinaryJudgementNode(
        criteria="Did the first reply apologise?",
        evaluation_params=[P.ROLE, P.CONTENT],
        turn_window=window,
    )
    node.add_verdict(True, score=5)
    node.add_verdict(False, score=0)
    return node


# -- graph rules -----------------------------------------------------------------------------


def test_conversational_nodes_are_their_single_turn_nodes():
    task = ConversationalTaskNode(instructions="Quote it.", output_label="Quote")
    assert isinstance(task, ConversationalTaskNode) and task.multiturn
    judged = ConversationalNonBinaryJudgementNode(criteria="How?", evaluation_params=["content"])
    assert judged.evaluation_params == [P.CONTENT]
    with pytest.raises(Exception, match="unknown conversational evaluation param"):
        ConversationalTaskNode(instructions="x", output_label="y", evaluation_params=["input"])


def test_a_graph_never_mixes_single_turn_and_conversational_nodes():
    root = ConversationalBinaryJudgementNode(criteria="Polite?")
    single = BinaryJudgementNode(criteria="Single?")
    single.add_verdict(True, score=1)
    single.add_verdict(False, score=0)
    root.add_verdict(True, then=single)
    root.add_verdict(False, score=0)
    with pytest.raises(MetricDefinitionError, match="mix multi and single turn"):
        DeepAcyclicGraph([root])


def test_a_conversational_graph_leads_only_to_conversational_metrics():
    root = ConversationalBinaryJudgementNode(criteria="Polite?")
    root.add_verdict(True, then=GEval(name="G", evaluation_params=["input"], criteria="c"))
    root.add_verdict(False, score=0)
    with pytest.raises(MetricDefinitionError, match="conversational DAG's verdict cannot lead"):
        DeepAcyclicGraph([root])
    fine = ConversationalBinaryJudgementNode(criteria="Polite?")
    geval = ConversationalGEval(name="G", evaluation_params=["scenario"], criteria="c")
    fine.add_verdict(True, then=geval)
    fine.add_verdict(False, score=0)
    assert DeepAcyclicGraph([fine]).multiturn


def test_each_metric_takes_its_own_kind_of_graph():
    with pytest.raises(MetricDefinitionError, match="ConversationalDAGMetric's"):
        DAGMetric(name="m", dag=polite_graph())
    single = BinaryJudgementNode(criteria="Ok?", evaluation_params=["actual_output"])
    single.add_verdict(True, score=10)
    single.add_verdict(False, score=0)
    with pytest.raises(MetricDefinitionError, match="graph of conversational nodes"):
        ConversationalDAGMetric(name="m", dag=DeepAcyclicGraph([single]))


def test_few_shot_and_calibration_stay_single_turn():
    with pytest.raises(MetricDefinitionError, match="single-turn nodes"):
        ConversationalBinaryJudgementNode(criteria="Polite?", contextual_calibration=True)


# -- metric files ----------------------------------------------------------------------------


def test_the_example_metric_files_load_and_round_trip():
    for name in ("support_dag.toml", "support_geval.toml"):
        metric = load_metric(EXAMPLES / name)
        again = metric_from_dict(metric.to_dict())
        assert again.to_dict() == metric.to_dict()
    dag = load_metric(EXAMPLES / "support_dag.toml")
    assert isinstance(dag, ConversationalDAGMetric)
    assert dag.to_dict()["nodes"]["acknowledged"]["turn_window"] == [0, 1]
    assert isinstance(dag.dag.order[0], ConversationalCodeNode)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        pytest.param(
            {"type": "binary", "criteria": "c", "verdicts": [], "examples": []},
            "node 'n': unknown field(s): examples",
            id="examples",
        ),
        pytest.param(
            {
                "type": "binary",
                "criteria": "c",
                "turn_window": [3, 1],
                "verdicts": [{"verdict": True, "score": 1}, {"verdict": False, "score": 0}],
            },
            "node 'n': 'turn_window' start",
            id="window",
        ),
        pytest.param(
            {
                "type": "binary",
                "criteria": "c",
                "evaluation_params": ["actual_output"],
                "verdicts": [{"verdict": True, "score": 1}, {"verdict": False, "score": 0}],
            },
            "node 'n': unknown conversational evaluation param 'actual_output'",
            id="single-turn-param",
        ),
        pytest.param(
            {"type": "likelihood", "task": "t"},
            "node 'n': unknown type 'likelihood'",
            id="unknown-type",
        ),
        pytest.param(
            {
                "type": "code",
                "check": "regex",
                "args": {"pattern": "x"},
                "fields": ["role"],
                "verdicts": [{"verdict": True, "score": 1}, {"verdict": False, "score": 0}],
            },
            "'role' is not a text field",
            id="code-reads-role",
        ),
    ],
)
def test_conversational_metric_files_are_checked_as_strictly(node, message, tmp_path):
    if node["type"] == "likelihood":  # a metric kind, but no conversational one: refused
        node = {"type": "nope"}
        message = "node 'n': unknown type 'nope'"
    data = {"type": "conversational_dag", "name": "m", "nodes": {"n": node}}
    with pytest.raises(MetricDefinitionError, match=re.escape(message)):
        metric_from_dict(data)


def test_a_single_turn_geval_under_a_conversational_verdict_is_refused(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        """
type = "conversational_dag"
name = "m"
[nodes.n]
type = "binary"
criteria = "c"
evaluation_params = ["content"]
verdicts = [{ verdict = true, then = "g" }, { verdict = false, score = 0 }]
[nodes.g]
type = "geval"
name = "G"
evaluation_params = ["actual_output"]
criteria = "c"
"""
    )
    with pytest.raises(MetricFileError, match="cannot lead to GEval"):
        load_metric(path)


# -- walks -----------------------------------------------------------------------------------


def test_the_example_dag_walks_to_its_intended_leaves_where_code_decides():
    """Code nodes decide the refund rule; the scripted judge answers the tone and the
    opening as each case intends, so every case reaches its intended score."""
    rows = read_cases(EXAMPLES / "support.jsonl")
    metric = load_metric(EXAMPLES / "support_dag.toml")
    intended = {
        "asked-then-refunded": (True, True, 1.0),
        "refunded-without-asking": (True, True, 0.0),
        "troubleshooting": (True, True, 1.0),
        "asked-then-refunded-rudely": (False, True, 0.3),
        "rude-no-refund": (False, True, 0.3),
        "asked-then-refunded-no-acknowledgement": (True, False, 0.7),
    }
    for row in rows:
        polite, acknowledged, score = intended[row.case_id]
        judge = FakeJudge(
            choices={
                "polite": [1.0, 0.0] if polite else [0.0, 1.0],
                "acknowledge": [1.0, 0.0] if acknowledged else [0.0, 1.0],
            }
        )
        result = metric.run(row.case, JudgeSession(judge), include_reason=False)
        assert result.score == pytest.approx(score), row.case_id
        text = row.case.metadata["intended"]
        assert text.endswith(f"score {score:.1f}") or f"score {score:.1f} " in text


def test_code_nodes_read_the_speakers_and_window_they_name():
    case = chat("I want a refund", "Sure, what is your order number?", "123", "Thanks")
    node = ConversationalCodeNode(
        "regex", {"pattern": "refund"}, fields=["content"], roles=["assistant"]
    )
    assert node._text(case, ()) == "Sure, what is your order number?\nThanks"
    windowed = ConversationalCodeNode(
        "regex", {"pattern": "x"}, fields=["content"], turn_window=(2, 3)
    )
    assert windowed._text(case, ()) == "123\nThanks"
    assert windowed.to_spec(str)["turn_window"] == [2, 3]
    both = ConversationalCodeNode(
        "regex", {"pattern": "x"}, fields=["scenario", "content"], roles="user"
    )
    assert both._text(chat("a", "b", scenario="s"), ()) == "s\n\na"


def test_every_node_prompt_opens_with_the_conversation_and_a_window_with_its_turns():
    case = chat("My kettle broke.", "Sorry to hear that.", "Refund please.", "Done.")
    metric = ConversationalDAGMetric(name="m", dag=polite_graph(window=(0, 1)))
    judge = FakeJudge(choices={"polite": [0.0, 1.0], "apologise": [1.0, 0.0]})
    result = metric.run(case, JudgeSession(judge), include_reason=False)
    assert result.score == 0.5
    first, second = (call[1] for call in judge.calls)
    assert first.blocks[0] == HEADER and len(first.blocks) == 6  # header, heading, 4 turns
    assert second.blocks == first.blocks[:4]  # the window's turns: a prefix of the first
    assert [s["node"] for s in result.trace.to_dict()["path"]] == ["binary-1", "binary-2"]


def test_a_window_past_the_end_of_a_conversation_stops_the_run_before_judging():
    metric = ConversationalDAGMetric(name="m", dag=polite_graph(window=(2, 5)))
    judge = FakeJudge()
    with pytest.raises(DataError, match=r"case 'short': node 'binary-2' reads turns 2-5"):
        evaluate([chat("a", "b", id="short")], [metric], model=JudgeSession(judge))
    assert judge.calls == []


def test_a_single_turn_metric_refuses_a_conversation_before_judging():
    metric = GEval(name="G", evaluation_params=["input"], criteria="c")
    with pytest.raises(DataError, match="is a conversation, which metric 'G' does not judge"):
        evaluate([chat("a", id="c")], [metric], model=JudgeSession(FakeJudge()))


def test_soft_walks_and_the_reason_work_on_conversations():
    metric = ConversationalDAGMetric(name="m", dag=polite_graph(), soft=True)
    judge = FakeJudge(
        choices={"polite": [0.6, 0.4], "apologise": [0.5, 0.5]}, texts={"reason": "Polite."}
    )
    result = metric.run(chat("Hi", "Hello"), JudgeSession(judge))
    assert result.trace.to_dict()["expected_score"] == pytest.approx(0.6 * 1 + 0.4 * 0.25)
    assert result.reason == "Polite."
    assert judge.calls[-1][1].blocks == judge.calls[0][1].blocks  # the reason reads the chat


# -- ConversationalGEval -----------------------------------------------------------------------


def test_conversational_geval_adds_role_and_content_as_deepeval_does():
    metric = ConversationalGEval(name="G", evaluation_params=["expected_outcome"], criteria="c")
    assert metric.evaluation_params == [P.EXPECTED_OUTCOME, P.CONTENT, P.ROLE]
    assert ConversationalGEval(name="G", criteria="c").evaluation_params is None  # per case
    with pytest.raises(MetricDefinitionError, match="cannot be an empty list"):
        ConversationalGEval(name="G", evaluation_params=[], criteria="c")
    with pytest.raises(MetricDefinitionError, match="'criteria' or 'evaluation_steps'"):
        ConversationalGEval(name="G", evaluation_params=["content"])


def test_conversational_geval_prompt_and_score():
    metric = load_metric(EXAMPLES / "support_geval.toml")
    case = chat("Broken kettle.", "Sorry! Order number?", expected_outcome="A refund.")
    case.chatbot_role = "ShopCo support"  # not among the metric's params: not shown
    judge = FakeJudge(scores={"Score (1 to 5)": [0, 0, 0, 0.5, 0.5]})
    result = metric.run(case, JudgeSession(judge), include_reason=False)
    assert result.score == pytest.approx((4.5 - 1) / 4)
    prompt = judge.calls[0][1]
    assert prompt.question == "Score (1 to 5):"
    assert prompt.blocks[0] == HEADER
    assert prompt.blocks[1].startswith("Evaluation criteria (Support quality):")
    assert "score how well the turns of the conversation meet the criteria" in prompt.blocks[1]
    assert prompt.blocks[2:] == (
        "Expected Outcome:\nA refund.\n\n",
        "Conversation:\n",
        "Turn 1 (user):\nBroken kettle.\n\n",
        "Turn 2 (assistant):\nSorry! Order number?\n\n",
    )
    assert "ShopCo" not in prompt.text()


def test_conversational_geval_shares_the_chatbot_role_before_the_definition():
    metric = ConversationalGEval(
        name="G", evaluation_params=["chatbot_role", "scenario"], evaluation_steps=["Read."]
    )
    judge = FakeJudge()
    metric.run(chat("Hi", chatbot_role="ShopCo", scenario="s"), JudgeSession(judge))
    blocks = judge.calls[0][1].blocks
    assert blocks[1] == "Chatbot Role:\nShopCo\n\n"
    assert blocks[2].startswith("Evaluation criteria (G):")
    assert blocks[3] == "Scenario:\ns\n\n"


def test_conversational_geval_generates_steps_once_under_its_own_key():
    metric = ConversationalGEval(name="G", evaluation_params=["content"], criteria="Be kind.")
    judge = FakeJudge(
        texts={"numbered steps": "1. Read every turn.\n2. Check kindness.\n3. Score it."}
    )
    session = JudgeSession(judge)
    metric.run(chat("Hi"), session, include_reason=False)
    metric.run(chat("Hello"), session, include_reason=False)
    assert metric.steps_generated == 1
    assert "the turns of the conversation" in judge.calls[0][1].question


def test_conversations_run_through_evaluate_with_every_metric_kind():
    rows = read_cases(EXAMPLES / "support.jsonl")
    metrics = [load_metric(EXAMPLES / n) for n in ("support_dag.toml", "support_geval.toml")]
    outcome = evaluate(rows, metrics, model=JudgeSession(FakeJudge()), use_cache=False)
    assert len(outcome.lines) == 12 and all(line.result.error is None for line in outcome.lines)


# -- the command line ------------------------------------------------------------------------

RULE = """
type = "conversational_dag"
name = "Refund rule"
include_reason = false
[nodes.promised]
type = "code"
check = "regex"
args = { pattern = "refund", ignore_case = true }
fields = ["content"]
roles = ["assistant"]
verdicts = [{ verdict = false, score = 10 }, { verdict = true, then = "asked_first" }]
[nodes.asked_first]
type = "code"
check = "precedes"
args = { first = "order (?:number|#|id)[^.!?\\\\n]*\\\\?", then = "refund", ignore_case = true }
fields = ["content"]
roles = ["assistant"]
verdicts = [{ verdict = false, score = 0 }, { verdict = true, score = 10 }]
"""


def test_anvil_eval_judges_a_case_file_of_conversations(tmp_path: Path):
    """A code-only conversational DAG: the CLI reads conversations, walks them and never
    loads the model (the model file here is not one)."""
    metric = tmp_path / "rule.toml"
    metric.write_text(RULE)
    model = tmp_path / "stand-in.gguf"
    model.write_bytes(b"GGUF")
    out = tmp_path / "results.jsonl"
    args = ["eval", "--metric", str(metric), "--data", str(EXAMPLES / "support.jsonl")]
    result = CliRunner().invoke(main, [*args, "--model", str(model), "--out", str(out)])
    assert result.exit_code == 1, result.output  # one conversation breaks the rule
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    scores = {line["case_id"]: line["score"] for line in lines if "case_id" in line}
    assert scores == {
        "asked-then-refunded": 1.0,
        "refunded-without-asking": 0.0,
        "troubleshooting": 1.0,
        "asked-then-refunded-rudely": 1.0,
        "rude-no-refund": 1.0,
        "asked-then-refunded-no-acknowledgement": 1.0,
    }
    assert "Refund rule      6        83%" in result.output


def test_anvil_eval_refuses_single_turn_cases_for_a_conversational_metric(tmp_path: Path):
    metric = tmp_path / "rule.toml"
    metric.write_text(RULE)
    data = ROOT / "examples" / "meeting_summaries.jsonl"
    result = CliRunner().invoke(main, ["eval", "--metric", str(metric), "--data", str(data)])
    assert result.exit_code == 2
    assert "is a single-turn case, which metric 'Refund rule' does not judge" in result.output


def test_conversations_bench_against_their_labels(tmp_path: Path):
    pytest.importorskip("scipy")
    from anvil_local.bench.run import bench
    from anvil_local.bench.suite import MetricSpec

    path = tmp_path / "chats.jsonl"
    lines = []
    for i, kind in enumerate(["kind", "rude", "kind", "rude", "kind", "rude"]):
        turns = [
            {"role": "user", "content": f"Question {i}?"},
            {"role": "assistant", "content": f"A {kind} answer {i}."},
        ]
        lines.append(
            {
                "id": f"c{i}",
                "doc": f"d{i // 2}",
                "turns": turns,
                "labels": {"polite": int(kind == "kind")},
            }
        )
    path.write_text("\n".join(json.dumps(line) for line in lines))
    rows = read_cases(path)

    class ToneJudge(FakeJudge):
        def choose(self, prompt, options):
            rude = "rude" in "".join(prompt.blocks)
            self.choices = {"polite": [0.2, 0.8] if rude else [0.9, 0.1], "apologise": [0.5, 0.5]}
            return super().choose(prompt, options)

    metric = ConversationalDAGMetric(name="Tone", dag=polite_graph(), soft=True)
    judge = ToneJudge()
    result = bench(
        rows,
        [(metric, MetricSpec(path, "polite"))],
        [None],
        lambda *a, **k: evaluate(*a, model=JudgeSession(judge), use_cache=False),
        source=str(path),
    )
    (outcome,) = result.outcomes
    assert outcome.kind == "binary" and outcome.cases == 6
    assert outcome.agreement["auroc"].value == 1.0
