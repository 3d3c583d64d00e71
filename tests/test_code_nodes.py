"""Code nodes, code metrics and the checks behind them: each check on a match and a miss,
nodes in a walk (verdict probability 1, value in the trace), files both ways, and the code
version of the headings example walking every example case to its intended leaf."""

import json
from pathlib import Path

import pytest

from anvil_local import DAGMetric, LLMTestCase, evaluate
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics import checks
from anvil_local.metrics.code import CodeMetric
from anvil_local.metrics.dag import (
    BinaryJudgementNode,
    CodeChoiceNode,
    CodeNode,
    CodeTaskNode,
    DeepAcyclicGraph,
    VerdictNode,
)
from anvil_local.registry import register_check
from anvil_local.spec import load_metric, metric_from_dict
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("name", "text", "args", "hit", "miss"),
    [
        ("regex", "Total: 42", {"pattern": r"\d+"}, True, None),
        ("contains_all", "Intro Body", {"terms": ["Intro", "Body"]}, True, None),
        ("contains_any", "nothing here", {"terms": ["Intro", "Body"]}, False, None),
        ("ordered", "Intro then Body", {"terms": ["Intro", "Body"]}, True, None),
        ("ordered", "Body then Intro", {"terms": ["Intro", "Body"]}, False, None),
        ("length", "one two three", {"min": 2, "max": 3}, True, None),
        ("length", "one two three four", {"max": 3}, False, None),
        ("length", "abc", {"unit": "chars", "min": 4}, False, None),
        ("json_valid", '{"a": 1}', {"schema": {"required": ["a"]}}, True, None),
        ("json_valid", '{"b": 1}', {"schema": {"required": ["a"]}}, False, None),
        ("json_valid", "{not json", {}, False, None),
    ],
)
def test_bool_checks_on_a_match_and_a_miss(name, text, args, hit, miss):
    assert checks.run_check(name, text, None, args) is hit


def test_numeric_checks_count_and_compare():
    assert checks.regex_count("a1 b2 c3", pattern=r"\d") == 3.0
    assert checks.number("costs rose 12.5% this year") == 12.5
    assert checks.misplaced("Intro\nBody\nConclusion", terms=["Intro", "Body", "Conclusion"]) == 0
    assert checks.misplaced("Intro\nConclusion\nBody", terms=["Intro", "Body", "Conclusion"]) == 2
    assert checks.misplaced("Conclusion\nIntro\nBody", terms=["Intro", "Body", "Conclusion"]) == 3
    assert checks.misplaced("Intro\nBody", terms=["Intro", "Body", "Conclusion"]) == 1
    assert checks.compare(0.4, {"at_least": 0.5}) is False
    assert checks.compare(0.6, {"at_least": 0.5, "at_most": 0.7}) is True


def test_ngram_overlap_is_the_share_of_the_texts_bigrams_found_in_the_source():
    source = "The cat sat on the mat."
    # bigrams of the text: the-cat (in), cat-sat (in), sat-under (out), under-the (out)
    assert checks.ngram_overlap("The cat sat under the", source, n=2) == 0.5
    assert checks.novel_ngrams("The cat sat under the", source, n=2) == 0.5
    assert checks.ngram_overlap("cat", source, n=2) == 1.0  # no bigram: nothing unsupported
    with pytest.raises(MetricDefinitionError, match="source"):
        checks.ngram_overlap("a b", None)


def test_summary_shape_checks_count_words_sentences_and_repeats():
    text = "The cat sat. The cat sat on the mat! Did it"
    assert checks.word_count(text) == 11.0
    assert checks.sentence_count(text) == 3.0  # the last one counts without its stop
    assert checks.sentence_count("  ") == 0.0
    # trigrams: the-cat-sat, cat-sat-the, sat-the-cat, the-cat-sat (again), cat-sat-on, ...
    assert checks.repeated_ngrams(text, n=3) == pytest.approx(1 / 9)  # 9 trigrams
    assert checks.repeated_ngrams("one two", n=3) == 0.0  # no trigram: nothing repeated
    assert checks.repeated_ngrams("a a a a", n=1) == 0.75


def test_a_bad_check_definition_is_refused():
    with pytest.raises(MetricDefinitionError, match="unknown check 'nope'"):
        CodeNode("nope", fields=["actual_output"])
    with pytest.raises(MetricDefinitionError, match="needs 'fields' or 'reads'"):
        CodeNode("regex", {"pattern": "x"})
    with pytest.raises(MetricDefinitionError, match="check 'regex'"):
        checks.run_check("regex", "x", None, {"patern": "x"})
    with pytest.raises(MetricDefinitionError, match="at_least"):
        checks.compare(3.0, {})


def registered_check_value(text, source=None, *, word):
    return float(text.count(word))


register_check("count_word")(registered_check_value)


def mixed_dag() -> DAGMetric:
    """Code extracts the numbers; code checks there are some; the judge asks about tone."""
    tone = BinaryJudgementNode(
        "Is the tone neutral?",
        [VerdictNode(True, score=10), VerdictNode(False, score=3)],
        evaluation_params=["actual_output"],
    )
    enough = CodeChoiceNode(
        "regex_count",
        [0, 1],
        {"pattern": r"^\d+$"},
        reads="Numbers",
        children=[
            VerdictNode("none", score=0),
            VerdictNode("one", score=5),
            VerdictNode("many", child=tone),
        ],
        label="enough",
    )
    extract = CodeTaskNode(r"(\d+)", "Numbers", fields=["actual_output"], children=[enough])
    return DAGMetric("Mixed", DeepAcyclicGraph([extract]), include_reason=False)


def test_code_nodes_walk_with_certain_verdicts_and_show_their_values():
    judge = FakeJudge(choices={"tone neutral": [0.9, 0.1]})
    metric = mixed_dag()
    assert metric.measure(LLMTestCase(actual_output="Sold 12 units for 30 each."), judge) == 1.0
    path = metric.trace.to_dict()["path"]
    assert path[0]["output"] == "12\n30" and path[0]["tokens"]["calls"] == 0
    assert path[1]["type"] == "code" and path[1]["value"] == 2.0
    assert path[1]["probabilities"] == {"none": 0.0, "one": 0.0, "many": 1.0}
    assert judge.kinds() == ["choose"]  # only the tone question reached the judge
    one = FakeJudge()
    assert metric.measure(LLMTestCase(actual_output="Sold 12 units."), one) == 0.5
    assert one.kinds() == []


def test_a_soft_walk_treats_code_verdicts_as_certain():
    metric = mixed_dag()
    metric.soft = True
    judge = FakeJudge(choices={"tone neutral": [0.6, 0.4]})
    metric.measure(LLMTestCase(actual_output="1 and 2"), judge)
    assert metric.expected_score == pytest.approx(0.6 * 1.0 + 0.4 * 0.3)


def test_code_nodes_round_trip_through_metric_files(tmp_path: Path):
    metric = mixed_dag()
    data = metric.to_dict()
    assert data["nodes"]["enough"] == {
        "type": "code_choice",
        "verdicts": [
            {"verdict": "none", "score": 0},
            {"verdict": "one", "score": 5},
            {"verdict": "many", "then": "binary-1"},
        ],
        "check": "regex_count",
        "args": {"pattern": r"^\d+$"},
        "bins": [0, 1],
        "reads": "Numbers",
    }
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(data))
    assert load_metric(path).to_dict() == data


def test_bins_must_fit_the_verdicts():
    with pytest.raises(MetricDefinitionError, match="one upper bound per verdict"):
        CodeChoiceNode(
            "regex_count",
            [0],
            {"pattern": "x"},
            fields=["actual_output"],
            children=[VerdictNode("a", score=0), VerdictNode("b", score=1), VerdictNode("c", 2)],
        )


def test_a_code_node_reading_a_missing_task_output_is_an_error_result():
    node = CodeNode(
        "regex",
        {"pattern": "x"},
        reads="Nowhere",
        source="actual_output",
        children=[VerdictNode(True, score=10), VerdictNode(False, score=0)],
    )
    metric = DAGMetric("M", DeepAcyclicGraph([node]), include_reason=False)
    with pytest.raises(MetricDefinitionError, match="no task output 'Nowhere'"):
        metric.measure(LLMTestCase(actual_output="x"), FakeJudge())


def test_the_code_headings_example_walks_each_case_to_its_intended_leaf():
    metric = load_metric(ROOT / "examples" / "headings.toml")
    intended = {
        "ordered": ("order", "Yes", 1.0),
        "missing-conclusion": ("headings", "No", 0.0),
        "swapped": ("order", "All out of order", 0.2),
        "no-headings": ("headings", "No", 0.0),
    }
    cases = [
        LLMTestCase(**json.loads(line))
        for line in (ROOT / "examples" / "meeting_summaries.jsonl").read_text().splitlines()
    ]
    judge = FakeJudge()
    for case in cases:
        result = metric.run(case, judge)
        last = result.trace.to_dict()["path"][-1]
        assert (last["node"], last["verdict"], result.score) == intended[case.id]
    assert judge.calls == []  # no model call at all


def test_a_code_metric_scores_by_its_check_and_needs_no_model():
    metric = CodeMetric("Bigram support", "ngram_overlap", source="input", args={"n": 2})
    case = LLMTestCase(input="The cat sat on the mat.", actual_output="The cat sat under the")
    outcome = evaluate([case], [metric], model=FakeJudge(), use_cache=False)
    line = outcome.lines[0]
    assert line.result.score == 0.5 and line.result.trace.to_dict() == {
        "type": "check",
        "check": "ngram_overlap",
        "value": 0.5,
    }
    assert metric_from_dict(metric.to_dict()).to_dict() == metric.to_dict()


def test_a_python_check_registered_by_name_works_in_a_file_defined_metric():
    metric = metric_from_dict(
        {"type": "check", "name": "Cats", "check": "count_word", "args": {"word": "cat"}}
    )
    result = metric.run(LLMTestCase(actual_output="cat cat dog"), None)
    assert result.score == 1.0 and result.trace.value == 2.0
