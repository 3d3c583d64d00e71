"""Few-shot examples and calibration (contextual and fitted), with a scripted judge: prompt
placement, parsing rules, and the arithmetic against hand-computed values."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from anvil_local import LLMTestCase
from anvil_local.bench.calibrate import fit_calibration, fit_map
from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import ChoiceResult, Usage
from anvil_local.metrics.calibration import (
    Calibration,
    ScoreMap,
    calibrate,
    divide_out,
    uncalibrated,
)
from anvil_local.metrics.dag import (
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    NonBinaryJudgementNode,
    VerdictNode,
)
from anvil_local.metrics.geval import GEval
from anvil_local.metrics.result import MetricResult
from anvil_local.run.evaluate import evaluate
from anvil_local.run.results import result_items
from anvil_local.spec import load_metric, metric_definition, metric_from_dict
from anvil_local.spec.files import MetricFileError, write_calibration
from tests.fakes import FakeJudge

SHA = "a" * 64
CASE = LLMTestCase(
    input="The bridge closes on Monday.", actual_output="Bridge shut Monday.", id="c1"
)
EXAMPLES = [
    {"input": "Rain is due on Friday.", "actual_output": "Friday will be wet.", "score": 5},
    {"input": "Rain is due on Friday.", "actual_output": "Snow on Sunday.", "score": 1},
]


class PriorJudge(FakeJudge):
    """Answers `free` on a content-free prompt (its case fields are "N/A"), `case` otherwise."""

    def __init__(self, case: Sequence[float], free: Sequence[float]) -> None:
        super().__init__()
        self.case_probs, self.free_probs = tuple(case), tuple(free)

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        self.calls.append(("choose", prompt, tuple(options)))
        free = "Input:\nN/A" in "".join(prompt.blocks)
        probs = self.free_probs if free else self.case_probs
        best = max(range(len(probs)), key=lambda i: (probs[i], -i))
        return ChoiceResult(tuple(options), probs, best, Usage(10, 5, 5, 1), 0.001)

    def free_calls(self) -> int:
        return sum("Input:\nN/A" in "".join(p.blocks) for _, p, _ in self.calls)


def consistency(**kwargs) -> GEval:
    return GEval(
        "Consistency",
        ["input", "actual_output"],
        evaluation_steps=["Compare the facts."],
        rubric=[
            {"score_range": [1, 2], "expected_outcome": "unsupported"},
            {"score_range": [3, 5], "expected_outcome": "supported"},
        ],
        include_reason=False,
        **kwargs,
    )


def yes_no_dag(**node_kwargs) -> DAGMetric:
    node = BinaryJudgementNode(
        criteria="Is the Actual Output supported by the Input?",
        evaluation_params=["input", "actual_output"],
        children=[VerdictNode(False, score=0), VerdictNode(True, score=10)],
        **node_kwargs,
    )
    return DAGMetric("Supported", DeepAcyclicGraph([node]), include_reason=False, soft=True)


# -- few-shot examples ------------------------------------------------------------------


def test_geval_examples_sit_between_the_header_and_the_case():
    judge = FakeJudge()
    consistency(examples=EXAMPLES).measure(CASE, judge)
    (_, prompt, _) = next(c for c in judge.calls if c[0] == "score")
    assert prompt.blocks[0] == HEADER
    assert prompt.blocks[1].startswith("Worked examples for Consistency")
    assert "Actual Output:\nFriday will be wet.\n\nAnswer: 5" in prompt.blocks[1]
    assert "Answer: 1" in prompt.blocks[1]
    assert prompt.blocks[2].startswith("Input:\nThe bridge closes")
    assert prompt.blocks[3].startswith("Evaluation criteria")
    assert prompt.blocks[4].startswith("Actual Output:")


def test_the_examples_block_is_the_same_text_on_every_case():
    judge = FakeJudge()
    metric = consistency(examples=EXAMPLES)
    metric.measure(CASE, judge)
    metric.measure(LLMTestCase(input="Other text.", actual_output="Other summary."), judge)
    first, second = [p for kind, p, _ in judge.calls if kind == "score"]
    assert first.blocks[:2] == second.blocks[:2]
    assert first.blocks[2] != second.blocks[2]


def test_without_examples_the_prompt_is_unchanged():
    judge = FakeJudge()
    consistency().measure(CASE, judge)
    (_, prompt, _) = next(c for c in judge.calls if c[0] == "score")
    assert prompt.blocks[1].startswith("Input:")
    assert prompt.blocks[2].startswith("Evaluation criteria")
    assert "examples" not in consistency().to_dict()


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ([{"input": "x", "actual_output": "y", "score": 6}], "integer from 1 to 5"),
        ([{"input": "x", "actual_output": "y", "score": True}], "integer from 1 to 5"),
        ([{"input": "x", "actual_output": "y"}], "has no 'score'"),
        ([{"score": 3}], "shows no field"),
        ([{"input": "", "score": 3}], "non-empty text"),
        ({"input": "x", "score": 3}, "must be a list of tables"),
        (["text"], "must be a table"),
    ],
)
def test_bad_geval_examples_are_definition_errors(examples, message):
    with pytest.raises(MetricDefinitionError, match=message):
        consistency(examples=examples)


def test_strict_geval_examples_answer_yes_or_no():
    metric = GEval(
        "S",
        ["actual_output"],
        criteria="Is it polite?",
        strict_mode=True,
        examples=[{"actual_output": "Thanks!", "verdict": True}],
    )
    assert metric.examples[0].answer_text == "Yes"
    with pytest.raises(MetricDefinitionError, match="'verdict'"):
        GEval("S", ["actual_output"], criteria="c", strict_mode=True, examples=EXAMPLES)


def test_node_examples_are_checked_against_its_verdicts_and_round_trip():
    metric = yes_no_dag(
        examples=[
            {"input": "a", "actual_output": "b", "verdict": True},
            {"input": "a", "actual_output": "c", "Headings": "x", "verdict": "No"},
        ]
    )
    again = metric_from_dict(json.loads(json.dumps(metric.to_dict())))
    assert again.to_dict() == metric.to_dict()
    node = metric.dag.root_nodes[0]
    assert [e.answer_text for e in node.examples] == ["Yes", "No"]
    with pytest.raises(MetricDefinitionError, match="'verdict'"):
        yes_no_dag(examples=[{"input": "a", "verdict": "Maybe"}])


def test_node_examples_come_before_the_case_in_its_prompt():
    judge = FakeJudge(choices={"supported": [0.4, 0.6]})
    yes_no_dag(examples=[{"input": "a", "actual_output": "b", "verdict": True}]).measure(
        CASE, judge
    )
    (_, prompt, _) = next(c for c in judge.calls if c[0] == "choose")
    assert prompt.blocks[0] == HEADER
    assert "Answer: Yes" in prompt.blocks[1]
    assert prompt.blocks[2].startswith("Input:\nThe bridge")


# -- contextual calibration -------------------------------------------------------------


def test_divide_out_matches_hand_computed_values():
    # (0.8 / 0.9, 0.2 / 0.1) = (0.8889, 2.0), normalised by 2.8889
    assert divide_out([0.8, 0.2], [0.9, 0.1]) == pytest.approx((0.307692, 0.692308), abs=1e-6)
    # a uniform prior changes nothing
    assert divide_out([0.7, 0.2, 0.1], [1 / 3] * 3) == pytest.approx((0.7, 0.2, 0.1))
    # a zero prior is floored, not a division by zero
    out = divide_out([0.5, 0.5], [1.0, 0.0])
    assert out[1] > 0.99 and sum(out) == pytest.approx(1.0)


def test_a_calibrated_node_divides_out_its_content_free_prior():
    judge = PriorJudge(case=[0.8, 0.2], free=[0.9, 0.1])  # options are (Yes, No)
    metric = yes_no_dag(contextual_calibration=True)
    metric.measure(CASE, judge)
    step = metric.trace.get("path")[0]
    assert step["uncalibrated"] == {"Yes": 0.8, "No": 0.2}
    assert step["prior"] == {"Yes": 0.9, "No": 0.1}
    assert step["probabilities"]["Yes"] == pytest.approx(0.307692, abs=1e-6)
    assert step["verdict"] == "No"  # the lean towards Yes is gone
    assert metric.expected_score == pytest.approx(0.307692, abs=1e-6)  # P(Yes) x 1


def test_the_prior_is_asked_once_per_question_and_model():
    judge = PriorJudge(case=[0.8, 0.2], free=[0.9, 0.1])
    metric = yes_no_dag(contextual_calibration=True)
    for text in ("one", "two", "three"):
        metric.measure(LLMTestCase(input=text, actual_output=text), judge)
    assert judge.free_calls() == 1


def test_a_calibrated_geval_divides_the_score_distribution():
    judge = PriorJudge(case=[0.1, 0.1, 0.2, 0.2, 0.4], free=[0.05, 0.05, 0.1, 0.2, 0.6])
    metric = consistency(contextual_calibration=True)
    metric.measure(CASE, judge)
    expected = divide_out([0.1, 0.1, 0.2, 0.2, 0.4], [0.05, 0.05, 0.1, 0.2, 0.6])
    trace = metric.trace.to_dict()
    assert list(trace["distribution"].values()) == pytest.approx(expected)
    weighted = sum(v * p for v, p in zip(range(1, 6), expected, strict=True))
    assert metric.score == pytest.approx((weighted - 1) / 4)
    assert trace["prior"]["5"] == 0.6


# -- debiasing without labels -------------------------------------------------------------


def test_a_negated_question_is_read_flipped_and_averaged():
    # the judge leans to Yes: 0.8 Yes to the question, 0.7 Yes to its negation
    judge = FakeJudge(choices={"Is the Actual": [0.8, 0.2], "Is anything": [0.7, 0.3]})
    metric = yes_no_dag(negation="Is anything in the Actual Output unsupported by the Input?")
    metric.measure(CASE, judge)
    step = metric.trace.get("path")[0]
    # P(Yes) = (0.8 + P(No to the negation) 0.3) / 2
    assert step["probabilities"]["Yes"] == pytest.approx(0.55)
    assert step["verdict"] == "Yes" and metric.expected_score == pytest.approx(0.55)
    questions = [prompt.question for kind, prompt, _ in judge.calls if kind == "choose"]
    assert questions == [
        "Is the Actual Output supported by the Input? (Yes or No)",
        "Is anything in the Actual Output unsupported by the Input? (Yes or No)",
    ]
    assert metric.to_dict()["nodes"]["binary-1"]["negation"].startswith("Is anything")


def choice_dag(**node_kwargs) -> DAGMetric:
    node = NonBinaryJudgementNode(
        criteria="How well is it supported?",
        evaluation_params=["input", "actual_output"],
        children=[
            VerdictNode("Fully", score=10),
            VerdictNode("Partly", score=5),
            VerdictNode("Not", score=0),
        ],
        **node_kwargs,
    )
    return DAGMetric("Support", DeepAcyclicGraph([node]), include_reason=False, soft=True)


def test_rotated_options_average_every_listed_order():
    # whatever order the options are listed in, the judge picks the first listed
    judge = FakeJudge(
        choices={
            "Options: Fully; Partly; Not": [0.6, 0.2, 0.2],
            "Options: Partly; Not; Fully": [0.2, 0.6, 0.2],
            "Options: Not; Fully; Partly": [0.2, 0.2, 0.6],
        }
    )
    metric = choice_dag(rotate_options=True)
    metric.measure(CASE, judge)
    step = metric.trace.get("path")[0]
    assert list(step["probabilities"].values()) == pytest.approx([1 / 3] * 3)  # lean gone
    assert step["verdict"] == "Fully"  # a tie goes to the first declared option
    assert len([c for c in judge.calls if c[0] == "choose"]) == 3
    (node,) = metric.to_dict()["nodes"].values()
    assert node["rotate_options"] is True


def test_each_debias_option_belongs_to_its_kind_of_node():
    with pytest.raises(MetricDefinitionError, match="'rotate_options' is for multiple-choice"):
        yes_no_dag(rotate_options=True)
    with pytest.raises(MetricDefinitionError, match="'negation' is for yes/no nodes"):
        choice_dag(negation="Is it not?")
    with pytest.raises(MetricDefinitionError, match="'negation' must be a non-empty string"):
        yes_no_dag(negation=" ")


# -- fitted calibration -----------------------------------------------------------------


def test_a_score_map_interpolates_and_clips():
    entry = ScoreMap((0.2, 0.6), (0.1, 0.9), SHA)
    assert entry.apply(0.4) == pytest.approx(0.5)
    assert entry.apply(0.0) == pytest.approx(0.1)
    assert entry.apply(1.0) == pytest.approx(0.9)
    with pytest.raises(MetricDefinitionError, match="must not decrease"):
        ScoreMap((0.2, 0.6), (0.9, 0.1), SHA)
    with pytest.raises(MetricDefinitionError, match="sha256"):
        ScoreMap((0.2,), (0.5,), "abc")


def test_centred_isotonic_fit_matches_hand_computed_pools():
    # graded: (0, 1, 0, 1) pools the middle pair to 0.5, placed at its mean score 0.25
    scores, values = fit_map(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, 0, 1.0]), False)
    assert scores == pytest.approx([0.1, 0.25, 0.4]) and values == pytest.approx([0, 0.5, 1])
    # binary: classes weigh 1/their count (0.25, 0.5, 0.25): the pool of (1, 0) is
    # 0.25 / 0.75 = 1/3 (not 1/2), at the weighted mean score (0.025 + 0.1) / 0.75
    scores, values = fit_map(np.array([0.1, 0.2, 0.3]), np.array([1, 0, 1.0]), True)
    assert scores == pytest.approx([0.166667, 0.3], abs=1e-6)
    assert values == pytest.approx([1 / 3, 1], abs=1e-6)
    # strictly increasing between its ends: the order of the scores is kept there
    entry = ScoreMap(tuple(scores), tuple(values), SHA)
    assert entry.apply(0.2) < entry.apply(0.25) < entry.apply(0.29)


def test_calibrate_maps_the_score_keeps_the_raw_one_and_the_cache_form():
    metric = consistency()
    metric.calibration = Calibration({"fake-judge": ScoreMap((0.0, 1.0), (0.2, 0.4), SHA)})
    raw = MetricResult("Consistency", 0.5, True, 0.5)
    done = calibrate(metric, raw, "fake-judge", SHA)
    assert done.score == pytest.approx(0.3) and done.success is False
    assert done.raw_score == 0.5
    assert uncalibrated(done) == raw
    assert calibrate(metric, raw, "other-model", "c" * 64) is raw
    assert calibrate(metric, raw, "the-same-file.gguf", SHA).score == pytest.approx(0.3)
    assert calibrate(metric, raw, "fake-judge", "b" * 64) is raw  # fitted on another file


def test_calibration_is_read_from_a_metric_dict_but_not_part_of_its_definition():
    data = consistency().to_dict()
    data["calibration"] = {"fake-judge": {"sha256": SHA, "scores": [0, 1], "values": [0, 1]}}
    metric = metric_from_dict(data)
    assert "calibration" not in metric.to_dict()  # so not in any cache key
    assert metric_definition(metric)["calibration"]["fake-judge"]["values"] == [0, 1]
    data["calibration"] = {"fake-judge": {"sha256": SHA, "scores": [0, 1]}}
    with pytest.raises(MetricDefinitionError, match="'scores' and 'values'"):
        metric_from_dict(data)


def test_evaluate_writes_calibrated_scores_and_caches_raw_ones(tmp_path):
    metric = consistency()
    metric.calibration = Calibration({"fake-judge": ScoreMap((0.0, 1.0), (0.2, 0.4), SHA)})
    judge = FakeJudge(scores={"Score (": [0, 0, 0, 0, 1.0]})  # raw score 1.0
    out = tmp_path / "results.jsonl"
    first = evaluate([CASE], [metric], model=judge, out=out)
    assert first.lines[0].result.score == pytest.approx(0.4)
    line = result_items(out)[0]
    assert line["score"] == pytest.approx(0.4) and line["raw_score"] == 1.0
    again = evaluate([CASE], [metric], model=judge)  # from the cache, calibrated again
    assert again.cached == 1
    assert again.lines[0].result.score == pytest.approx(0.4)
    assert again.lines[0].result.raw_score == 1.0


def test_fit_calibration_fits_on_one_fold_and_checks_on_the_other():
    rng = np.random.default_rng(0)
    label = np.tile([0.0, 0.0, 1.0, 1.0], 10)  # both classes in both folds
    raw = np.clip(0.7 + 0.1 * label + rng.normal(0, 0.05, 40), 0, 1)  # always >= 0.5 raw
    docs = [f"d{i:02d}" for i in range(40)]
    fit = fit_calibration(
        model="m",
        sha256=SHA,
        metric="M",
        label="consistent",
        kind="binary",
        raw=raw,
        human=label,
        docs=docs,
        threshold=0.5,
        label_range=(0.0, 1.0),
        source="toy",
    )
    assert fit.fit_cases == 20 and fit.check_cases == 20
    assert fit.before["balanced_accuracy"].value == pytest.approx(0.5)  # passes everything
    assert fit.after["balanced_accuracy"].value > 0.8
    assert fit.difference.value == pytest.approx(
        fit.after["balanced_accuracy"].value - fit.before["balanced_accuracy"].value
    )
    assert "fold 0 of 2" in fit.entry.fitted_on


# -- writing a map into a metric file ---------------------------------------------------

TOML = """# my metric (this comment stays)
type = "geval"
name = "Consistency"
evaluation_params = ["input", "actual_output"]
evaluation_steps = ["Compare the facts."]
"""


def test_write_calibration_appends_and_replaces_one_model_table(tmp_path):
    path = tmp_path / "metric.toml"
    path.write_text(TOML)
    first = {"sha256": SHA, "label": "consistent", "scores": [0.1, 0.9], "values": [0.2, 0.8]}
    write_calibration(path, "model-a", first)
    write_calibration(path, "model-b", {**first, "values": [0.0, 1.0]})
    write_calibration(path, "model-a", {**first, "values": [0.3, 0.7]})
    text = path.read_text()
    assert text.startswith("# my metric (this comment stays)")
    assert text.count('[calibration."model-a"]') == 1
    metric = load_metric(path)
    assert metric.calibration.maps["model-a"].values == (0.3, 0.7)
    assert metric.calibration.maps["model-b"].values == (0.0, 1.0)


def test_write_calibration_writes_holds_on_as_an_inline_table(tmp_path):
    path = tmp_path / "metric.toml"
    path.write_text(TOML)
    entry = {"sha256": SHA, "scores": [0.1, 0.9], "values": [0.2, 0.8]}
    write_calibration(path, "m", {**entry, "holds_on": {"Q8_0": 'AUROC 0.69 -> 0.68 "paired"'}})
    fitted = load_metric(path).calibration.maps["m"]
    assert fitted.holds_on == (("Q8_0", 'AUROC 0.69 -> 0.68 "paired"'),)


def test_a_metric_file_names_its_model_and_a_run_without_one_uses_it(tmp_path):
    path = tmp_path / "metric.toml"
    path.write_text('model = "my-judge"\n' + TOML)
    metric = load_metric(path)
    assert metric.model == "my-judge"
    assert "model" not in metric.to_dict()  # outside the definition: no part of a cache key
    assert metric_definition(metric)["model"] == "my-judge"
    assert metric_from_dict(metric_definition(metric)).model == "my-judge"
    bad = tmp_path / "bad.toml"
    bad.write_text("model = 3\n" + TOML)
    with pytest.raises(MetricFileError, match="'model' must be"):
        load_metric(bad)


def test_write_calibration_into_json_and_a_refused_file(tmp_path):
    path = tmp_path / "metric.json"
    path.write_text(json.dumps(consistency().to_dict()))
    entry = {"sha256": SHA, "scores": [0.0, 1.0], "values": [0.0, 1.0]}
    write_calibration(path, "m", entry)
    assert load_metric(path).calibration.maps["m"].scores == (0.0, 1.0)
    clash = tmp_path / "clash.toml"
    clash.write_text(TOML + "calibration = {}\n")
    with pytest.raises(MetricFileError):
        write_calibration(clash, "m", entry)
    assert clash.read_text() == TOML + "calibration = {}\n"  # left as it was


def test_a_json_dump_keeps_the_calibration(tmp_path):
    from anvil_local.spec.files import dump_metric

    path = tmp_path / "metric.toml"
    path.write_text(TOML)
    write_calibration(path, "m", {"sha256": SHA, "scores": [0.0, 1.0], "values": [0.1, 0.9]})
    dumped = tmp_path / "metric.json"
    dump_metric(load_metric(path), dumped)
    assert load_metric(dumped).calibration.maps["m"].values == (0.1, 0.9)


def test_a_fit_split_with_one_class_names_the_metric():
    from anvil_local.errors import DataError

    with pytest.raises(DataError, match=r"^M on m: the fit split holds only one class"):
        fit_calibration(
            model="m",
            sha256=SHA,
            metric="M",
            label="consistent",
            kind="binary",
            raw=np.linspace(0, 1, 8),
            human=np.array([0, 1, 0, 1, 0, 1, 0, 1.0]),  # fold 0 (even documents) is all 0
            docs=[f"d{i}" for i in range(8)],
            threshold=0.5,
            label_range=(0.0, 1.0),
            source="toy",
        )
