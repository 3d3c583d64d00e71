"""Abstention on the real default judge: the headings DAG with the judge at every node marks
its toss-up walks uncertain, and `anvil bench --abstain-precision` fits a level on labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent


def test_uncertain_walks_are_their_path_probability_below_the_level(
    tmp_path: Path, default_model_path: Path
):
    out, junit = tmp_path / "r.jsonl", tmp_path / "r.xml"
    args = ["eval", "--metric", str(ROOT / "examples" / "headings_llm.toml")]
    args += ["--data", str(ROOT / "examples" / "meeting_summaries.jsonl"), "--out", str(out)]
    args += ["--model", str(default_model_path), "--no-progress", "--junit", str(junit)]
    args += ["--abstain-below", "0.99", "--uncertain", "error"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    lines = result_items(out)
    assert len(lines) == 4
    for line in lines:
        path = line["trace"]["path_probability"]
        assert line["confidence"] == pytest.approx(max(0.5, path))
        assert line.get("uncertain", False) is (line["confidence"] < 0.99)
        if line.get("uncertain"):
            assert line["success"] is None and line["score"] is not None
    uncertain = sum(1 for line in lines if line.get("uncertain"))
    assert uncertain >= 1  # a 135M judge is not 99% sure of every walk
    assert "uncertain" in result.output.splitlines()[0]
    assert junit.read_text().count('type="Uncertain"') == uncertain


def test_bench_fits_a_level_and_draws_the_risk_coverage_curve(
    tmp_path: Path, default_model_path: Path
):
    rows = (ROOT / "benchmarks" / "data" / "qags_xsum.jsonl").read_text().splitlines()[:12]
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(rows) + "\n")
    args = ["bench", "--data", str(data), "--label", "labels.consistent", "--no-progress"]
    args += ["--metric", str(ROOT / "examples" / "small_judge" / "consistency_check.toml")]
    args += ["--model", str(default_model_path), "--abstain-precision", "0.6"]
    args += ["--report", str(tmp_path / "report")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "Abstention (target accuracy 60% on the verdicts kept" in result.output
    assert "Risk-coverage" in result.output
    (outcome,) = json.loads((tmp_path / "report" / "bench.json").read_text())["metrics"]
    found = outcome["abstention"]
    assert found["cases"] == 12 and len(found["curve"]) == 9
    assert found["curve"][0]["coverage"] == 1.0
    assert found["curve"][0]["accuracy"] == pytest.approx(found["accuracy_all"]["value"])
    assert found["level"] is None or 0.5 <= found["level"] <= 1.0
