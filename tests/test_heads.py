"""Features metrics, fitted heads and `anvil fit`'s arithmetic: code-only members and a
fake judge, hand-computed values. (The real judge is in test_model_heads.py.)"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from anvil_local import LLMTestCase, evaluate
from anvil_local.bench.fit import as_head, design, fit, fit_report, markdown, out_of_fold
from anvil_local.cli import main
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.calibration import Calibration, calibrate, uncalibrated
from anvil_local.metrics.features import FeaturesMetric
from anvil_local.metrics.heads import Head, features_of
from anvil_local.metrics.result import MetricResult
from anvil_local.run.results import result_items
from anvil_local.spec import load_metric, metric_definition, metric_from_dict
from tests.fakes import FakeJudge

SHA = "a" * 64
OVERLAP = {
    "type": "check",
    "name": "unigrams",
    "check": "ngram_overlap",
    "args": {"n": 1},
    "field": "actual_output",
    "source": "input",
}
LENGTH = {"type": "check", "name": "short", "check": "length", "args": {"max": 5}}
FEATURES = {"type": "features", "name": "Both", "features": [OVERLAP, LENGTH]}


def case(output: str, source: str = "the cat sat on the mat") -> LLMTestCase:
    return LLMTestCase(input=source, actual_output=output)


def test_a_features_metric_reads_every_member_and_round_trips():
    metric = metric_from_dict(FEATURES)
    assert isinstance(metric, FeaturesMetric)
    result = metric.run(case("the cat sat on a rug"), FakeJudge())
    # 4 of the 6 words are in the source; 6 words is not at most 5
    assert result.trace.to_dict() == {
        "type": "features",
        "values": {"unigrams": 4 / 6, "short": 0.0},
    }
    assert result.score == pytest.approx((4 / 6 + 0.0) / 2)  # the mean until a head is fitted
    assert metric_from_dict(metric.to_dict()).to_dict() == metric.to_dict()


def test_a_numeric_check_is_read_as_its_value_not_its_clipped_score():
    count = {"type": "check", "name": "words", "check": "word_count"}
    repeats = {"type": "check", "name": "repeats", "check": "repeated_ngrams", "args": {"n": 1}}
    metric = metric_from_dict({"type": "features", "name": "Shape", "features": [count, repeats]})
    result = metric.run(case("the cat sat on the mat the end"), FakeJudge())
    # 8 words (a score clipped to 0..1 would say 1.0); 2 of the 8 unigrams repeat an earlier one
    assert result.trace.to_dict()["values"] == {"words": 8.0, "repeats": 2 / 8}
    assert result.score == pytest.approx((1.0 + 2 / 8) / 2)  # the mean of the members' scores


@pytest.mark.parametrize(
    ("features", "message"),
    [
        ([], "one or more metrics"),
        ([OVERLAP, OVERLAP], "distinct names"),
        (["unigrams"], "a metric or its table"),
    ],
)
def test_bad_features_are_definition_errors(features, message):
    with pytest.raises((MetricDefinitionError, TypeError), match=message):
        metric_from_dict({**FEATURES, "features": features})


def test_a_features_file_names_its_members_relative_to_itself(tmp_path: Path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "overlap.toml").write_text(
        'type = "check"\nname = "unigrams"\ncheck = "ngram_overlap"\nargs = { n = 1 }\n'
        'source = "input"\n\n[calibration."m"]\nsha256 = "' + SHA + '"\nscores = [0, 1]\n'
        "values = [0, 1]\n"
    )
    path = tmp_path / "f.toml"
    path.write_text(
        'type = "features"\nname = "F"\nfeatures = ["parts/overlap.toml", '
        '{ type = "check", name = "short", check = "length", args = { max = 5 } }]\n'
    )
    metric = load_metric(path)
    assert [m.name for m in metric.features] == ["unigrams", "short"]
    assert metric.features[0].calibration is None  # a head reads raw readings


def test_a_logistic_head_matches_hand_computed_values():
    head = Head("logistic", ("a", "b"), (1.0, 0.0), (2.0, 1.0), (0.5, -1.0), 0.25, SHA)
    z = 0.25 + 0.5 * (3.0 - 1.0) / 2.0 - 1.0 * (0.5 - 0.0) / 1.0
    assert head.score([3.0, 0.5]) == pytest.approx(1 / (1 + math.exp(-z)))
    linear = Head("linear", ("a",), (0.0,), (1.0,), (2.0,), 0.0, SHA)
    assert linear.score([0.3]) == pytest.approx(0.6)
    assert linear.score([0.9]) == 1.0  # clipped


def test_features_of_reads_each_trace_kind():
    geval = MetricResult(
        "G",
        0.5,
        True,
        0.5,
        trace={"type": "geval", "distribution": {"1": 0.2, "2": 0.8}, "weighted": 1.8},
    )
    assert features_of(geval) == {"p1": 0.2, "p2": 0.8, "weighted": 1.8}
    likelihood = {"type": "likelihood", "value": -1.0, "conditional": -2.0, "unconditional": -1.0}
    assert features_of(MetricResult("L", 0.3, False, 0.5, trace=likelihood)) == {
        "value": -1.0,
        "conditional": -2.0,
        "unconditional": -1.0,
    }
    soft = MetricResult("D", 1.0, True, 0.5, trace={"type": "dag", "expected_score": 0.7})
    assert features_of(soft) == {"expected_score": 0.7}
    assert features_of(MetricResult("C", 0.4, False, 0.5, trace={"type": "check"})) == {
        "score": 0.4
    }


def test_a_head_in_the_calibration_table_scores_after_the_cache(tmp_path: Path):
    data = dict(FEATURES)
    head = Head("logistic", ("unigrams", "short"), (0.5, 0.5), (0.5, 0.5), (4.0, 0.0), 0.0, SHA)
    data["calibration"] = {"fake-judge": head.to_dict()}
    metric = metric_from_dict(data)
    assert "calibration" not in metric.to_dict()  # not part of any cache key
    assert metric_definition(metric)["calibration"]["fake-judge"]["kind"] == "logistic"
    raw = metric.run(case("the cat sat on a rug"), FakeJudge())
    done = calibrate(metric, raw, "fake-judge", SHA)
    z = 4.0 * (4 / 6 - 0.5) / 0.5
    assert done.score == pytest.approx(1 / (1 + math.exp(-z)))
    assert done.raw_score == raw.score and uncalibrated(done) == raw
    out = tmp_path / "r.jsonl"
    first = evaluate([case("the cat sat on a rug")], [metric], model=FakeJudge(), out=out)
    assert first.lines[0].result.score == pytest.approx(done.score)
    again = evaluate([case("the cat sat on a rug")], [metric], model=FakeJudge())
    assert again.cached == 1 and again.lines[0].result.score == pytest.approx(done.score)


def test_a_head_that_misses_a_feature_leaves_the_score_alone():
    metric = metric_from_dict(FEATURES)
    head = Head("logistic", ("nope",), (0.0,), (1.0,), (1.0,), 0.0, SHA)
    metric.calibration = Calibration({"fake-judge": head})
    raw = metric.run(case("the cat"), FakeJudge())
    assert calibrate(metric, raw, "fake-judge", SHA) is raw


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "tree"}, "unknown head field|kind"),
        ({"coef": [1.0]}, "'coef' has 1 numbers for 2 features"),
        ({"scale": [1.0, 0.0]}, "scales must be positive"),
        ({"intercept": "0"}, "'intercept' must be a number"),
        ({"sha256": "x"}, "sha256"),
    ],
)
def test_a_bad_head_table_is_a_definition_error(change, message):
    head = Head("logistic", ("a", "b"), (0.0, 0.0), (1.0, 1.0), (1.0, 1.0), 0.0, SHA)
    data = {**FEATURES, "calibration": {"m": {**head.to_dict(), **change}}}
    with pytest.raises(MetricDefinitionError, match=message):
        metric_from_dict(data)


# -- fitting ---------------------------------------------------------------------------------


def separable(n: int = 60, seed: int = 0):
    """Two features: the first decides the label (with a little noise), the second is noise."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % 2).astype(float)
    signal = y + rng.normal(0, 0.6, n)
    noise = rng.normal(0, 1, n)
    found = [{"signal": float(s), "noise": float(z)} for s, z in zip(signal, noise, strict=True)]
    docs = [f"d{i}" for i in range(n)]
    return found, y, docs


def test_the_kept_head_is_the_pipeline_as_numbers():
    found, y, docs = separable()
    d = design(found, y, docs, "t")
    model, _ = fit(d.x, d.target, d.docs, True)
    head = as_head(model, d.names, True, SHA, "consistent", "here")
    probs = model.predict_proba(d.x)[:, 1]
    assert [head.score(row) for row in d.x] == pytest.approx(probs.tolist(), abs=1e-6)
    assert head.coef[0] > abs(head.coef[1])  # the signal outweighs the noise


def test_out_of_fold_predictions_never_see_their_own_documents():
    found, y, docs = separable()
    d = design(found, y, docs, "t")
    pred = out_of_fold(d.x, d.target, d.docs, True, folds=5)
    flipped = d.y.copy()
    flipped[0] = 1 - flipped[0]  # another label for one case changes only the others' heads
    again = out_of_fold(d.x, flipped, d.docs, True, folds=5)
    fold = sorted(set(docs)).index("d0") % 5
    same_fold = [i for i, doc in enumerate(docs) if sorted(set(docs)).index(doc) % 5 == fold]
    assert pred[same_fold] == pytest.approx(again[same_fold])


def test_the_report_compares_the_head_with_each_feature():
    found, y, docs = separable(80)
    report = fit_report(
        design(found, y, docs, "t"),
        model="m",
        sha256=SHA,
        metric="F",
        label="consistent",
        source="t.jsonl",
    )
    assert report.best_feature == "signal"
    assert report.feature_stats["noise"]["auroc"].value < 0.7
    assert report.head_stats["auroc"].value > 0.75
    assert [row[0] for row in report.efficiency][:2] == ["25", "50"]
    assert report.efficiency[-1][0].startswith("all")


def test_design_refuses_cases_with_other_features():
    with pytest.raises(Exception, match="carries the features"):
        design(
            [{"a": 1.0}, {"a": 0.0}, {"b": 1.0}, {"a": 1.0}],
            np.array([1, 0, 1, 0.0]),
            ["a", "b", "c", "d"],
            "t",
        )


def test_anvil_fit_writes_a_head_that_anvil_eval_applies(tmp_path: Path, default_model_path):
    rng = np.random.default_rng(1)
    rows = []
    for i in range(40):
        consistent = i % 2
        words = ["the", "cat", "sat", "on", "the", "mat"]
        out = " ".join(words[: 3 + rng.integers(0, 3)])
        if not consistent:
            out += " " + " ".join(rng.choice(["dog", "ran", "far", "away", "fast"], 3))
        rows.append(
            {
                "id": f"c{i}",
                "doc": f"d{i}",
                "input": " ".join(words),
                "actual_output": out,
                "labels": {"consistent": consistent},
            }
        )
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    metric = tmp_path / "f.json"
    metric.write_text(json.dumps(FEATURES))
    args = [
        "fit",
        "--metric",
        str(metric),
        "--data",
        str(data),
        "--label",
        "labels.consistent",
        "--model",
        str(default_model_path),
        "--no-progress",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "| **head** |" in result.output and "Label efficiency" in result.output
    table = json.loads(metric.read_text())["calibration"][default_model_path.name]
    assert table["kind"] == "logistic" and table["features"] == ["unigrams", "short"]
    out = tmp_path / "r.jsonl"
    ran = CliRunner().invoke(
        main,
        [
            "eval",
            "--metric",
            str(metric),
            "--data",
            str(data),
            "--model",
            str(default_model_path),
            "--out",
            str(out),
        ],
    )
    assert ran.exit_code in (0, 1), ran.output
    lines = result_items(out)
    assert all("raw_score" in x for x in lines)  # the head applied, the raw mean kept
    head = Head.from_dict(table, "m")
    first = lines[0]
    values = [first["trace"]["values"][n] for n in head.features]
    assert first["score"] == pytest.approx(head.score(values))


def calibrate_on_half(d):
    """`anvil bench --fit-calibration`'s fit for a features metric's design, binary label."""
    from anvil_local.bench.calibrate import fit_calibration

    return fit_calibration(
        model="m",
        sha256=SHA,
        metric="F",
        label="consistent",
        kind="binary",
        raw=d.x.mean(axis=1),
        human=d.y,
        docs=d.docs,
        threshold=0.5,
        label_range=(0.0, 1.0),
        source="toy",
        features=(d.names, d.x),
    )


def test_bench_fit_calibration_fits_a_head_for_a_features_metric_on_one_fold():
    found, y, docs = separable(60)
    d = design(found, y, docs, "t")
    fit_result = calibrate_on_half(d)
    assert isinstance(fit_result.entry, Head) and fit_result.entry.kind == "logistic"
    assert "fold 0 of 2" in fit_result.entry.fitted_on
    assert fit_result.fit_cases == fit_result.check_cases == 30
    # the head reads the signal apart from the noise that the plain mean mixes in
    assert fit_result.after["auroc"].value > fit_result.before["auroc"].value


def test_bench_fit_calibration_projects_a_hidden_state_as_anvil_fit_does():
    found, y, docs = separable(60)
    rng = np.random.default_rng(2)
    with_state = [{**f, **{f"s.h{j}": float(rng.normal()) for j in range(30)}} for f in found]
    d = design(with_state, y, docs, "t")
    fit_result = calibrate_on_half(d)
    head = fit_result.entry
    assert isinstance(head, Head) and head.features == tuple(d.names)
    # projected: the 30 state columns share one projection centre per column, scale 1
    state = [j for j, n in enumerate(d.names) if n.startswith("s.h")]
    assert all(head.scale[j] == 1.0 for j in state)
    assert fit_result.after["auroc"].value > 0.5


HIDDEN = {
    "type": "hidden_state",
    "name": "state",
    "question": "Is the summary supported by the document?",
}


def test_a_hidden_state_member_reads_p_yes_and_every_dimension():
    metric = metric_from_dict({"type": "features", "name": "With state", "features": [HIDDEN]})
    judge = FakeJudge(choices={"Is the summary supported by the document? (Yes or No)": [0.7, 0.3]})
    result = metric.run(case("the cat sat"), judge)
    values = result.trace.to_dict()["values"]
    assert values["state"] == pytest.approx(0.7)
    assert [k for k in values if k != "state"] == [f"state.h{i}" for i in range(16)]
    # the state is the one the judge read where it answers that question, after the case
    again = judge.hidden_state(judge.calls[0][1])
    assert [values[f"state.h{i}"] for i in range(16)] == list(again.state)
    assert [kind for kind, _, _ in judge.calls[:2]] == ["hidden_state", "choose"]
    alone = features_of(metric_from_dict(HIDDEN).run(case("the cat sat"), judge))
    assert alone["p_yes"] == pytest.approx(0.7) and alone["state.h3"] == again.state[3]


def test_a_head_over_a_projected_state_is_written_over_the_raw_dimensions():
    """The kept head folds the principal-component projection into its weights: applied to
    the raw dimensions it gives the fitted pipeline's own predictions, for either label."""
    rng = np.random.default_rng(0)
    n, dims = 60, 20
    state = rng.normal(size=(n, dims))
    other = rng.normal(size=(n, 2))
    x = np.hstack([other[:, :1], state, other[:, 1:]])  # state columns in the middle
    names = ["a", *[f"s.h{i}" for i in range(dims)], "b"]
    docs = [f"d{i % 12}" for i in range(n)]
    found = [dict(zip(names, row, strict=True)) for row in x]
    for y in (
        (state[:, 0] + other[:, 0] > 0).astype(float),
        np.round(np.clip(state[:, 1] + 3, 1, 5)),
    ):
        d = design(found, y, docs, "test")
        model, _ = fit(d.x, d.target, d.docs, d.binary, state=tuple(range(1, dims + 1)))
        assert len(model) == 3  # projected, scaled, fitted
        head = as_head(model, d.names, d.binary, SHA, "y", "here")
        assert head.features == tuple(names)
        expected = model.predict_proba(d.x)[:, 1] if d.binary else np.clip(model.predict(d.x), 0, 1)
        assert [head.score(list(row)) for row in d.x] == pytest.approx(expected, abs=1e-6)


def test_fit_report_reads_a_hidden_state_together_not_dimension_by_dimension():
    rng = np.random.default_rng(1)
    n = 40
    y = (np.arange(n) % 2).astype(float)
    found = [
        {"p": float(y[i] + rng.normal()), **{f"s.h{j}": float(rng.normal()) for j in range(10)}}
        for i in range(n)
    ]
    d = design(found, y, [f"d{i % 8}" for i in range(n)], "test")
    report = fit_report(
        d, model="m", sha256=SHA, metric="M", label="y", source="s", efficiency=False
    )
    assert list(report.feature_stats) == ["p"] and report.best_feature == "p"
    assert len(report.head.features) == 11
    assert "the hidden state's 10 dimensions through 8 principal components" in markdown(report)
