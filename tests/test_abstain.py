"""Abstention: a verdict's confidence, marking it uncertain, how a gate counts it, and the
bench's fitted level and risk-coverage curve (scripted judge, hand-computed values)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from anvil_local import GEval, LLMTestCase, SingleTurnParams, evaluate
from anvil_local.bench import abstention
from anvil_local.cli import main
from anvil_local.errors import DataError
from anvil_local.metrics.abstain import Abstention, confidence, plain, score_confidence
from anvil_local.metrics.result import MetricResult
from anvil_local.run.junit import junit_xml
from anvil_local.run.report import render_summary
from anvil_local.run.results import result_items
from tests.fakes import FakeJudge

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
SCORES = {"Score (": [0.0] * 8 + [0.5, 0.5, 0.0]}  # 8.5 of 10: a score of 0.85


def metric(name: str = "Coherence") -> GEval:
    return GEval(name=name, evaluation_params=P, evaluation_steps=["Read."], include_reason=False)


def cases(n: int) -> list[LLMTestCase]:
    return [LLMTestCase(input="doc", actual_output=f"summary {i}", id=f"c{i}") for i in range(n)]


def test_score_confidence_reads_the_threshold_as_even_odds():
    assert score_confidence(0.9, 0.5) == pytest.approx(0.9)
    assert score_confidence(0.2, 0.5) == pytest.approx(0.8)
    assert score_confidence(0.7, 0.7) == pytest.approx(0.5)
    assert score_confidence(1.0, 0.7) == pytest.approx(1.0)
    assert score_confidence(0.35, 0.7) == pytest.approx(0.75)  # halfway down to 0
    assert score_confidence(0.85, 0.7) == pytest.approx(0.75)  # halfway up to 1


def test_a_walked_dag_is_as_sure_as_its_path():
    walked = MetricResult("D", 1.0, True, 0.5, trace={"type": "dag", "path_probability": 0.62})
    assert confidence(walked) == pytest.approx(0.62)
    soft = MetricResult(
        "D", 0.9, True, 0.5, trace={"type": "dag", "path_probability": 0.3, "expected_score": 0.9}
    )
    assert confidence(soft) == pytest.approx(0.9)  # a soft DAG's score is its expectation
    assert confidence(MetricResult("D", None, None, 0.5, error="boom")) is None


def test_levels_parse_for_every_metric_or_one():
    both = Abstention.parse(["0.7", "Tone=0.9"], "error")
    assert both.level_for("Tone") == 0.9 and both.level_for("Other") == 0.7
    assert both.policy == "error"
    assert Abstention.parse([]) is None
    for bad in (["0.4"], ["x"], ["=0.7"], ["0.7", "0.8"], ["Tone=1.5"]):
        with pytest.raises(DataError, match="--abstain-below"):
            Abstention.parse(bad)


@pytest.mark.parametrize(
    ("policy", "success", "passed"), [("fail", False, False), ("pass", True, True)]
)
def test_an_unsure_verdict_is_marked_and_counted_by_the_policy(tmp_path, policy, success, passed):
    out = tmp_path / "r.jsonl"
    result = evaluate(
        cases(2),
        [metric()],
        model=FakeJudge(scores=SCORES),
        out=out,
        use_cache=False,
        abstain=Abstention.parse(["0.9"], policy),
    )
    assert result.all_passed is passed
    for line in result_items(out):
        assert line["uncertain"] is True and line["success"] is success
        assert line["confidence"] == pytest.approx(0.85) and line["score"] == pytest.approx(0.85)
    (summary,) = result.summaries()
    assert summary.uncertain == 2
    assert "uncertain" in render_summary(result).splitlines()[0]


def test_as_no_verdict_it_fails_the_gate_and_is_a_junit_error(tmp_path):
    result = evaluate(
        cases(2),
        [metric(), metric("Fluency")],
        model=FakeJudge(scores=SCORES),
        use_cache=False,
        abstain=Abstention.parse(["Coherence=0.9"], "error"),
    )
    assert not result.all_passed
    by_metric = {s.metric: s for s in result.summaries()}
    coherence, fluency = by_metric["Coherence"], by_metric["Fluency"]
    assert (coherence.uncertain, coherence.passed, coherence.failed) == (2, 0, 0)
    assert coherence.pass_rate is None and fluency.uncertain == 0 and fluency.passed == 2
    suite = ET.fromstring(junit_xml(result.lines)).find("testsuite")
    assert suite.get("errors") == "2" and suite.get("failures") == "0"
    assert len(suite.findall("testcase/error[@type='Uncertain']")) == 2


def test_above_the_level_the_confidence_is_kept_and_nothing_changes(tmp_path):
    result = evaluate(
        cases(1),
        [metric()],
        model=FakeJudge(scores=SCORES),
        use_cache=False,
        abstain=Abstention.parse(["0.8"]),
    )
    (line,) = result.lines
    assert line.result.success is True and not line.result.uncertain
    assert line.result.confidence == pytest.approx(0.85)


def test_the_cache_keeps_the_verdict_without_abstention(tmp_path, monkeypatch):
    monkeypatch.setenv("ANVIL_CACHE_DIR", str(tmp_path / "cache"))
    judge = FakeJudge(scores=SCORES)
    evaluate(cases(1), [metric()], model=judge, abstain=Abstention.parse(["0.9"]))
    again = evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES))
    (line,) = again.lines
    assert line.cached and line.result.success is True
    assert not line.result.uncertain and line.result.confidence is None
    marked = MetricResult("M", 0.85, False, 0.5, confidence=0.85, uncertain=True)
    assert plain(marked).success is True and plain(marked).confidence is None


def test_a_level_for_a_metric_the_run_lacks_is_refused():
    with pytest.raises(DataError, match="names no metric of this run: Tonne"):
        evaluate(
            cases(1),
            [metric()],
            model=FakeJudge(scores=SCORES),
            use_cache=False,
            abstain=Abstention.parse(["Tonne=0.8"]),
        )


def test_cli_refuses_a_bad_level_in_one_line(tmp_path: Path):
    data = tmp_path / "cases.jsonl"
    data.write_text('{"id": "a", "input": "x", "actual_output": "y"}\n')
    headings = str(Path(__file__).resolve().parent.parent / "examples" / "headings.toml")
    args = ["eval", "--metric", headings, "--data", str(data), "--abstain-below", "0.3"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: --abstain-below '0.3': the level is a confidence from 0.5 (a coin toss) to 1"
    ]


# -- the bench's reading ------------------------------------------------------------------


def test_risk_coverage_keeps_the_most_confident_share():
    confident = np.array([0.95, 0.9, 0.8, 0.7, 0.6, 0.55, 0.52, 0.51, 0.5, 0.5])
    correct = np.array([1, 1, 1, 1, 0, 1, 0, 0, 1, 0], dtype=float)
    curve = dict(abstention.risk_coverage(confident, correct))
    assert curve[1.0] == pytest.approx(0.6)
    assert curve[0.5] == pytest.approx(0.8)  # the top five: 1, 1, 1, 1, 0
    assert curve[0.4] == pytest.approx(1.0) and curve[0.2] == pytest.approx(1.0)


def test_the_fitted_level_is_the_lowest_that_reaches_the_target(monkeypatch):
    monkeypatch.setattr(abstention, "MIN_KEPT", 3)
    confident = np.array([0.95, 0.9, 0.8, 0.7, 0.6, 0.55])
    correct = np.array([1, 1, 1, 0, 1, 0], dtype=float)
    # kept from 0.55: 4/6; from 0.6: 4/5; from 0.7: 3/4; from 0.8: 3/3
    assert abstention.fit_level(confident, correct, 0.8) == pytest.approx(0.6)
    assert abstention.fit_level(confident, correct, 0.9) == pytest.approx(0.8)
    monkeypatch.setattr(abstention, "MIN_KEPT", 4)
    assert abstention.fit_level(confident, correct, 0.9) is None  # 3 kept is too few


def test_the_report_measures_each_half_with_the_other_halfs_level(monkeypatch):
    monkeypatch.setattr(abstention, "MIN_KEPT", 2)
    # documents a and c in fold 0, b and d in fold 1 (sorted names alternate)
    docs = ["a", "a", "b", "b", "c", "c", "d", "d"]
    confident = np.array([0.9, 0.6, 0.9, 0.6, 0.9, 0.6, 0.9, 0.6])
    correct = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=float)
    r = abstention.report(confident, correct, docs, 0.9)
    assert r.fold_levels == [pytest.approx(0.9), pytest.approx(0.9)]
    assert r.level == pytest.approx(0.9)
    assert r.held_out_coverage == pytest.approx(0.5)
    assert r.held_out_accuracy.value == pytest.approx(1.0)
    assert r.accuracy_all.value == pytest.approx(0.5)
    text = abstention.markdown([("m", "Tone", "label", r)])
    assert "| m | Tone | label | 8 | 0.500" in text and "| 50% | 1.000" in text
