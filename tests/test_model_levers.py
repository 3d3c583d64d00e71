"""Few-shot examples and calibration on the real default model: the examples are paid for
once (token counters), a calibrated node's numbers equal a direct computation, and a map
fitted by `anvil bench --fit-calibration` is written into the metric file and applied."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local import LLMTestCase
from anvil_local.cli import main
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.metrics.calibration import content_free_case, divide_out
from anvil_local.metrics.dag import BinaryJudgementNode, DAGMetric, DeepAcyclicGraph, VerdictNode
from anvil_local.metrics.dag.metric import judgement_question
from anvil_local.metrics.examples import examples_block
from anvil_local.metrics.geval import GEval
from anvil_local.metrics.layout import case_blocks
from anvil_local.run.results import result_items
from anvil_local.testcase import SingleTurnParams

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
PARAMS = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
SOURCE = "The city council voted on Tuesday to close the Elm Street library in March."
EXAMPLES = [
    {"input": SOURCE, "actual_output": "The library closes in March.", "score": 5},
    {"input": SOURCE, "actual_output": "Residents voted to build a library.", "score": 1},
]


def consistency(examples=None) -> GEval:
    return GEval(
        "Consistency",
        PARAMS,
        evaluation_steps=["Compare each statement of the Actual Output with the Input."],
        rubric=[
            {"score_range": [1, 2], "expected_outcome": "unsupported"},
            {"score_range": [3, 5], "expected_outcome": "supported"},
        ],
        include_reason=False,
        examples=examples,
    )


def test_few_shot_examples_are_paid_for_once(judge):
    with_examples, without = consistency(EXAMPLES), consistency()
    cases = [
        LLMTestCase(input="The bridge closes on Monday.", actual_output="Bridge shut Monday."),
        LLMTestCase(input="Rain is due on Friday.", actual_output="Friday will be dry."),
    ]
    block = examples_block(with_examples.examples, with_examples.name)[0]
    example_tokens = len(judge.runtime.tokenize(block, special=False))
    assert example_tokens > 80

    judge.choose(Prompt(("Something else entirely.\n\n",), "Yes or No?"), ["Yes", "No"])
    first, second = (with_examples.run(c, judge) for c in cases)
    judge.choose(Prompt(("Something else entirely.\n\n",), "Yes or No?"), ["Yes", "No"])
    plain_first, plain_second = (without.run(c, judge) for c in cases)

    assert first.usage.evaluated_tokens >= plain_first.usage.evaluated_tokens + example_tokens
    assert second.usage.reused_tokens >= example_tokens  # kept in the KV cache
    # after the first case the examples cost nothing: same work as without them
    assert abs(second.usage.evaluated_tokens - plain_second.usage.evaluated_tokens) <= 2
    assert 0 <= first.score <= 1 and 0 <= second.score <= 1


def test_contextual_calibration_equals_a_direct_computation(judge):
    node = BinaryJudgementNode(
        criteria="Is every statement in the Actual Output supported by the Input?",
        evaluation_params=PARAMS,
        children=[VerdictNode(False, score=0), VerdictNode(True, score=10)],
        contextual_calibration=True,
    )
    metric = DAGMetric("Supported", DeepAcyclicGraph([node]), include_reason=False, soft=True)
    case = LLMTestCase(input=SOURCE, actual_output="The library will close in March.")
    result = metric.run(case, judge)
    step = result.trace.get("path")[0]

    free = Prompt(case_blocks(content_free_case(PARAMS), PARAMS), judgement_question(node))
    prior = judge.choose(free, ["Yes", "No"]).probabilities
    raw = judge.choose(
        Prompt(case_blocks(case, PARAMS), judgement_question(node)), ["Yes", "No"]
    ).probabilities
    assert list(step["prior"].values()) == pytest.approx(prior, abs=1e-6)
    assert list(step["uncalibrated"].values()) == pytest.approx(raw, abs=1e-6)
    expected = divide_out(raw, prior)
    assert list(step["probabilities"].values()) == pytest.approx(expected, abs=1e-6)
    assert result.trace.get("expected_score") == pytest.approx(expected[0], abs=1e-6)
    assert HEADER in free.blocks


def test_bench_fits_a_calibration_that_eval_then_applies(tmp_path, real_data_dir):
    metric = tmp_path / "bigram.toml"
    shutil.copy(ROOT / "benchmarks" / "metrics" / "bigram_overlap.toml", metric)
    rows = []
    for i in range(12):
        consistent = i % 4 in (0, 1)
        summary = SOURCE if consistent else "Residents voted to build a new swimming pool."
        rows.append(
            {
                "id": f"c{i}",
                "doc": f"d{i:02d}",
                "input": SOURCE,
                "actual_output": summary,
                "labels": {"consistent": int(consistent)},
            }
        )
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    bench = runner.invoke(
        main,
        [
            *("bench", "--data", str(data), "--label", "labels.consistent"),
            *("--metric", str(metric), "--fit-calibration", "--no-progress"),
        ],
    )
    assert bench.exit_code == 0, bench.output
    assert "Fitted calibration" in bench.output and "wrote the" in bench.output
    assert '[calibration."smollm2-135m-instruct"]' in metric.read_text()

    out = tmp_path / "results.jsonl"
    run = runner.invoke(
        main, ["eval", "--metric", str(metric), "--data", str(data), "--out", str(out)]
    )
    assert run.exit_code in (0, 1), run.output
    results = result_items(out)
    assert all("raw_score" in r for r in results)
    assert {r["score"] for r in results if r["raw_score"] == 1.0} == {1.0}
    assert {r["score"] for r in results if r["raw_score"] < 0.5} == {0.0}
