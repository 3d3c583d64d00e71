"""The bench glue and its outputs without a model: scores from a stand-in runner, then the
Markdown, the JSON and the HTML report, rendered in a headless Chromium."""

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from anvil_local.bench.report import markdown, write_report
from anvil_local.bench.run import bench
from anvil_local.bench.suite import MetricSpec, load_suite, select
from anvil_local.metrics.base import MetricResult
from anvil_local.run.dataset import CaseRow
from anvil_local.run.records import EvaluationResult, ResultLine
from anvil_local.testcase import LLMTestCase

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Stub:
    """What bench reads of a metric: its name and threshold."""

    name: str
    threshold: float = 0.5


def rows(n_docs: int = 6, per_doc: int = 5, seed: int = 0) -> list[CaseRow]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_docs * per_doc):
        labels = {"quality": float(rng.integers(1, 6)), "ok": int(rng.integers(0, 2))}
        case = LLMTestCase(
            input=f"doc {i // per_doc}",
            actual_output=f"summary {i}",
            id=f"c{i}",
            metadata={"doc": f"d{i // per_doc}", "labels": labels},
        )
        out.append(CaseRow(position=i, line=i + 1, case=case))
    return out


def fake_runner(scores):
    """evaluate() stand-in: metric name -> function(row) -> score."""

    def run(rows, metrics, **kwargs):
        result = EvaluationResult()
        for row in rows:
            for metric in metrics:
                score = scores[metric.name](row)
                trace = {"expected_score": score} if metric.name.startswith("soft") else {}
                outcome = MetricResult(
                    metric.name, score, score >= metric.threshold, metric.threshold, trace=trace
                )
                result.lines.append(ResultLine(row.position, row.case_id, outcome, "fake", "0"))
        return result

    return run


def label(row, name):
    return row.case.metadata["labels"][name]


def test_graded_bench_compares_metrics_on_the_same_cases():
    data = rows()
    specs = [
        (Stub("close"), MetricSpec(Path("a"), "labels.quality")),
        (Stub("noise"), MetricSpec(Path("b"), "quality")),
    ]
    rng = np.random.default_rng(9)
    noise = {r.case_id: float(rng.random()) for r in data}
    runner = fake_runner(
        {"close": lambda r: label(r, "quality") / 5, "noise": lambda r: noise[r.case_id]}
    )
    result = bench(data, specs, [None], runner)
    close, _ = result.outcomes
    assert close.kind == "graded" and close.label == "quality"
    assert close.agreement["doc_spearman"].value == pytest.approx(1.0)
    assert close.headline[0] == "doc_spearman"
    (comparison,) = result.comparisons
    assert (comparison.a, comparison.b) == ("close", "noise")
    assert comparison.difference.value < 0 and comparison.difference.high < 0
    text = markdown(result)
    assert "| fake | close | quality | 30 | 0 | 1.000 [1.00, 1.00]" in text
    assert "G-Eval GPT-4" not in text  # no published figure for an unknown label


def test_two_models_are_compared_on_each_metric_and_label():
    data = rows()
    specs = [(Stub("m"), MetricSpec(Path("a"), "quality"))]
    rng = np.random.default_rng(3)
    noise = {r.case_id: float(rng.random()) for r in data}

    def runner(rows, metrics, model=None, **kwargs):
        result = EvaluationResult()
        for row in rows:
            score = label(row, "quality") / 5 if model == "good" else noise[row.case_id]
            outcome = MetricResult("m", score, score >= 0.5, 0.5)
            result.lines.append(ResultLine(row.position, row.case_id, outcome, model, "0"))
        return result

    result = bench(data, specs, ["good", "noisy"], runner)
    (diff,) = result.model_comparisons
    assert (diff.metric, diff.label, diff.a, diff.b) == ("m", "quality", "good", "noisy")
    assert diff.statistic == "doc_spearman" and diff.difference.high < 0
    assert "| m | quality | doc_spearman | good | noisy |" in markdown(result)
    assert result.to_dict()["model_comparisons"][0]["b"] == "noisy"
    assert bench(data, specs, ["good"], runner).model_comparisons == []


def test_binary_bench_reads_a_soft_dags_probability():
    data = rows()
    specs = [(Stub("soft yes/no"), MetricSpec(Path("a"), "labels.ok"))]
    runner = fake_runner({"soft yes/no": lambda r: 0.2 + 0.6 * label(r, "ok")})
    result = bench(data, specs, [None], runner)
    (outcome,) = result.outcomes
    assert outcome.kind == "binary"
    assert outcome.agreement["auroc"].value == 1.0
    assert outcome.agreement["balanced_accuracy"].value == 1.0
    assert outcome.agreement["ece"] == pytest.approx(0.2)
    assert json.loads(json.dumps(result.to_dict()))["metrics"][0]["headline"] == "auroc"


def test_errored_cases_are_left_out_and_counted():
    data = rows(3, 4)
    specs = [(Stub("m"), MetricSpec(Path("a"), "quality"))]

    def run(rows, metrics, **kwargs):
        result = fake_runner({"m": lambda r: label(r, "quality")})(rows, metrics)
        result.lines[0].result.score = None
        result.lines[0].result.error = "boom"
        return result

    (outcome,) = bench(data, specs, [None], run).outcomes
    assert (outcome.cases, outcome.errors) == (11, 1)


def test_docs_and_limit_select_cases():
    data = rows(4, 3)
    assert [r.case_id for r in select(data, 2, None)] == [f"c{i}" for i in range(6)]
    assert len(select(data, None, 5)) == 5
    assert len(select(data, None, None)) == 12


def test_the_shipped_suites_load():
    for name in ("summeval", "qags_xsum", "summedits", "summeval_panel"):
        suite = load_suite(name)
        assert suite.data.is_file(), suite.data
        assert all(m.file.is_file() for m in suite.metrics)
        assert len(suite.metrics) >= 4
    assert load_suite("summeval").docs == 10


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_the_html_report_renders_its_charts_in_a_browser(tmp_path: Path):
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs chromium for this test (.ci/run)")
        pytest.skip("no chromium on this machine")
    data = rows()
    specs = [
        (Stub("close"), MetricSpec(Path("a"), "coherence")),
        (Stub("soft yes/no"), MetricSpec(Path("b"), "ok")),
    ]
    for r in data:
        r.case.metadata["labels"]["coherence"] = label(r, "quality")
    runner = fake_runner(
        {
            "close": lambda r: label(r, "quality") / 5,
            "soft yes/no": lambda r: 0.3 + 0.4 * label(r, "ok"),
        }
    )
    result = bench(data, specs, [None], runner, source="data/summeval.jsonl")
    paths = write_report(result, tmp_path / "report")
    page = paths["html"].read_text()
    for fetch in ('src="http', 'href="http', "url(http", "<link", "<script", "@import"):
        assert fetch not in page, fetch  # nothing fetched: opens offline
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    url = paths["html"].resolve().as_uri()
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    ).stdout
    for chart in ("chart-scatter", "chart-agreement", "chart-reliability"):
        start = dom.index(f'id="{chart}"')
        figure = dom[start : dom.index("</figure>", start)]
        assert "<svg" in figure and ("<path" in figure or "<use" in figure), chart
    assert dom.count("G-Eval GPT-4") >= 2  # the published points, in the table and the chart
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1200,2000", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
    )
    assert shot.stat().st_size > 20_000  # a page with charts, not a blank one
