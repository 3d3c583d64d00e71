"""A head fitted on what the real default judge reads: `anvil fit` on a slice of QAGS-XSum
with the judge's least supported token beside an overlap check, then `anvil eval` applying
the written head. (A yes/no member is read as its P(Yes): test_heads.py, on the fake judge.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local.cli import main
from anvil_local.metrics.heads import Head
from anvil_local.run.results import result_items

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
FEATURES = {
    "type": "features",
    "name": "Consistency features",
    "features": [
        {
            "type": "check",
            "name": "unigrams",
            "check": "ngram_overlap",
            "args": {"n": 1},
            "field": "actual_output",
            "source": "input",
        },
        str(ROOT / "examples" / "small_judge" / "least_supported_token.toml"),
    ],
}


def test_anvil_fit_on_the_real_judge_writes_a_head_anvil_eval_applies(
    tmp_path: Path, default_model_path: Path
):
    rows = (ROOT / "benchmarks" / "data" / "qags_xsum.jsonl").read_text().splitlines()[:10]
    data = tmp_path / "qags.jsonl"
    data.write_text("\n".join(rows) + "\n")
    metric = tmp_path / "features.json"
    metric.write_text(json.dumps(FEATURES))
    model = ["--model", str(default_model_path)]
    fitted = CliRunner().invoke(
        main,
        [
            "fit",
            "--metric",
            str(metric),
            "--data",
            str(data),
            "--label",
            "labels.consistent",
            "--folds",
            "3",
            "--no-progress",
            *model,
        ],
    )
    assert fitted.exit_code == 0, fitted.output
    for name in ("unigrams", "Least supported token", "Least supported token.conditional"):
        assert f"| {name} |" in fitted.output
    table = json.loads(metric.read_text())["calibration"][default_model_path.name]
    head = Head.from_dict(table, default_model_path.name)
    assert head.kind == "logistic" and "10 cases of 10 documents" in head.fitted_on
    out = tmp_path / "results.jsonl"
    ran = CliRunner().invoke(
        main, ["eval", "--metric", str(metric), "--data", str(data), "--out", str(out), *model]
    )
    assert ran.exit_code in (0, 1), ran.output
    lines = result_items(out)
    assert len(lines) == 10 and all(x["error"] is None for x in lines)
    for line in lines:  # the head's own arithmetic on the readings the judge gave
        values = [line["trace"]["values"][n] for n in head.features]
        assert line["score"] == pytest.approx(head.score(values))


def test_a_features_metric_reads_the_same_prepared_for_its_group_or_case_by_case(
    default_model_path: Path,
):
    from anvil_local import evaluate
    from anvil_local.models import get_judge
    from anvil_local.run.dataset import read_cases
    from anvil_local.spec import metric_from_dict

    rows = read_cases(ROOT / "examples" / "summeval_sample.jsonl")[:3]  # one document
    metric = metric_from_dict(
        {**FEATURES, "features": [FEATURES["features"][0], LIKELY], "name": "F"}
    )
    judge = get_judge(str(default_model_path))
    grouped = evaluate(rows, [metric], model=judge, use_cache=False, include_reason=False)
    alone = [metric.run(row.case, judge, include_reason=False) for row in rows]
    by_case = {x.case_id: x.result.trace.to_dict() for x in grouped.lines}
    assert [by_case[row.case_id] for row in rows] == [a.trace.to_dict() for a in alone]


LIKELY = {
    "type": "likelihood",
    "name": "contrast",
    "task": "Summarise the Input in a few sentences.",
    "evaluation_params": ["input"],
    "target": "actual_output",
    "contrast": True,
}


def test_the_shipped_coherence_head_reads_the_summary_shape_on_the_real_judge(
    tmp_path: Path, default_model_path: Path
):
    """The shipped SummEval head (the judge's readings and the summary's shape) applies to the
    default judge by its sha256: the shape is read as counts, and the score is the head's."""
    import tomllib

    from anvil_local.metrics.checks import repeated_ngrams, sentence_count, word_count

    shipped = ROOT / "examples" / "small_judge" / "coherence_head_summeval.toml"
    rows = (ROOT / "benchmarks" / "data" / "summeval.jsonl").read_text().splitlines()[:2]
    data = tmp_path / "summeval.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "results.jsonl"
    model = ["--model", str(default_model_path)]
    ran = CliRunner().invoke(
        main, ["eval", "--metric", str(shipped), "--data", str(data), "--out", str(out), *model]
    )
    assert ran.exit_code in (0, 1), ran.output
    table = tomllib.loads(shipped.read_text())["calibration"]["smollm2-135m-instruct"]
    head = Head.from_dict(table, "smollm2-135m-instruct")
    lines = result_items(out)
    assert len(lines) == 2 and all(x["error"] is None for x in lines)
    summaries = {json.loads(row)["id"]: json.loads(row)["actual_output"] for row in rows}
    for line in lines:
        summary = summaries[line["case_id"]]
        values = line["trace"]["values"]
        assert values["words"] == word_count(summary) > 1  # a count, not a clipped score
        assert values["sentences"] == sentence_count(summary)
        assert values["repeated trigrams"] == repeated_ngrams(summary, n=3)
        assert line["score"] == pytest.approx(head.score([values[n] for n in head.features]))


def test_a_head_over_the_real_judges_hidden_state_is_written_and_applied(
    tmp_path: Path, default_model_path: Path
):
    """`anvil fit` reads a hidden-state member's 576 dimensions through its projection and
    writes a head over the raw dimensions; `anvil eval` applies exactly that head."""
    rows = (ROOT / "benchmarks" / "data" / "qags_xsum.jsonl").read_text().splitlines()[:10]
    data = tmp_path / "qags.jsonl"
    data.write_text("\n".join(rows) + "\n")
    metric = tmp_path / "features.json"
    question = "Is every statement in the Actual Output supported by the Input?"
    members = [
        FEATURES["features"][0],
        {"type": "hidden_state", "name": "state", "question": question},
    ]
    metric.write_text(json.dumps({"type": "features", "name": "State", "features": members}))
    model = ["--model", str(default_model_path)]
    fitted = CliRunner().invoke(
        main,
        [
            *("fit", "--metric", str(metric), "--data", str(data)),
            *("--label", "labels.consistent", "--folds", "3", "--no-progress", *model),
        ],
    )
    assert fitted.exit_code == 0, fitted.output
    assert "| state |" in fitted.output and "| state.h0 |" not in fitted.output
    assert "the hidden state's 576 dimensions through 8 principal components" in fitted.output
    table = json.loads(metric.read_text())["calibration"][default_model_path.name]
    head = Head.from_dict(table, default_model_path.name)
    assert head.features[:2] == ("unigrams", "state") and len(head.features) == 2 + 576
    out = tmp_path / "results.jsonl"
    ran = CliRunner().invoke(
        main, ["eval", "--metric", str(metric), "--data", str(data), "--out", str(out), *model]
    )
    assert ran.exit_code in (0, 1), ran.output
    lines = result_items(out)
    assert len(lines) == 10 and all(x["error"] is None for x in lines)
    for line in lines:
        values = line["trace"]["values"]
        assert 0.0 < values["state"] < 1.0  # the judge's P(Yes)
        assert line["score"] == pytest.approx(head.score([values[n] for n in head.features]))
