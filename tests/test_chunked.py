"""A chunked metric: its member asked of each piece of a long field, scores aggregated."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil_local import LLMTestCase
from anvil_local.errors import MetricDefinitionError, MetricFileError
from anvil_local.judge.results import ChoiceResult, Usage
from anvil_local.metrics.chunked import ChunkedMetric, pieces
from anvil_local.metrics.definitions import metric_from_dict
from anvil_local.spec import load_metric
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parents[1]
CHUNKED = ROOT / "examples" / "small_judge" / "faithfulness_chunked.toml"
DOC = (
    "The council met on Monday. It discussed the budget at length.\n"
    "The mayor left early. Bus fares will rise by ten pence in May."
)


class PieceJudge(FakeJudge):
    """P(Yes) high only where the piece read holds the fare rise (the document's last line)."""

    def choose(self, prompt, options):
        self.calls.append(("choose", prompt, tuple(options)))
        text = "".join(prompt.blocks)
        yes = 0.9 if "in May" in text else 0.2 if "budget" in text else 0.1
        probs = [1 - yes, yes] if options[0].lower().startswith("no") else [yes, 1 - yes]
        best = max(range(2), key=lambda i: probs[i])
        return ChoiceResult(tuple(options), tuple(probs), best, Usage(10, 5, 5, 1), 0.001)


CASE = LLMTestCase(input=DOC, actual_output="Fares will rise by ten pence.")


def test_pieces_are_whole_sentences_within_the_word_bound():
    assert pieces(DOC, 10) == [
        "The council met on Monday.",
        "It discussed the budget at length. The mayor left early.",
        "Bus fares will rise by ten pence in May.",
    ]
    assert pieces(DOC, 1000) == [" ".join(DOC.split("\n"))]
    long = "word " * 30 + "end."
    assert pieces(f"Short one. {long}", 10) == ["Short one.", long.strip()]
    assert pieces("", 10) == [""]


def test_the_score_is_the_best_piece_and_the_trace_keeps_every_piece():
    metric = load_metric(CHUNKED)
    chunked = ChunkedMetric("C", metric.metric, words=10)
    chunked.measure(CASE, PieceJudge())
    trace = chunked.trace.to_dict()
    assert trace["scores"] == pytest.approx([0.1, 0.2, 0.9])
    assert chunked.score == pytest.approx(0.9) and trace["chosen"] == 2
    assert trace["member"]["type"] == "dag"
    judge = PieceJudge()
    whole = ChunkedMetric("C", metric.metric, words=1000)
    whole.measure(CASE, judge)
    assert whole.trace.to_dict()["scores"] == pytest.approx([0.9])
    mean = ChunkedMetric("C", metric.metric, words=10, aggregate="mean")
    mean.measure(CASE, PieceJudge())
    assert mean.score == pytest.approx(0.4)
    low = ChunkedMetric("C", metric.metric, words=10, aggregate="min")
    low.measure(CASE, PieceJudge())
    assert low.score == pytest.approx(0.1) and low.trace.to_dict()["chosen"] == 0


def test_the_shipped_file_names_its_member_and_its_definition_round_trips():
    metric = load_metric(CHUNKED)
    assert isinstance(metric, ChunkedMetric) and metric.model == "smollm2-135m-faithful"
    assert metric.metric.name == "Faithfulness" and metric.metric.model is None
    data = metric.to_dict()
    assert data["metric"] == load_metric(CHUNKED.parent / "faithfulness.toml").to_dict()
    assert metric_from_dict(data).to_dict() == data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"field": "context"}, "'field' must be one of"),
        ({"field": "expected_output"}, "does not read 'expected_output'"),
        ({"words": 5}, "'words' must be a whole number of 10 or more"),
        ({"aggregate": "median"}, "'aggregate' must be one of max, mean, min"),
    ],
)
def test_a_bad_definition_is_refused_in_one_line(change, message):
    data = {**load_metric(CHUNKED).to_dict(), **change}
    with pytest.raises(MetricDefinitionError, match=message):
        metric_from_dict(data)


def test_a_member_file_that_is_missing_names_the_file(tmp_path: Path):
    path = tmp_path / "c.toml"
    path.write_text('type = "chunked"\nname = "C"\nmetric = "nowhere.toml"\n')
    with pytest.raises(MetricFileError, match=r"nowhere\.toml"):
        load_metric(path)


def test_a_prefix_group_is_read_piece_by_piece_with_the_same_results():
    from anvil_local.models.sessions import as_session

    member = load_metric(CHUNKED).metric
    other = LLMTestCase(input=DOC, actual_output="The mayor stayed.")
    alone = []
    for case in (CASE, other):
        metric = ChunkedMetric("C", member, words=10)
        metric.measure(case, PieceJudge())
        alone.append(metric.result.to_dict() | {"seconds": 0})
    judge = PieceJudge()
    session = as_session(judge, None)
    metric = ChunkedMetric("C", member, words=10)
    metric.prepare([CASE, other], session)
    firsts = ["".join(p.blocks) for _, p, _ in judge.calls[:2]]
    assert all("Monday" in text for text in firsts)  # both cases' first piece, then the next
    assert ["ten pence" in t for t in firsts] == [True, False]
    calls = len(judge.calls)
    grouped = [metric.run(c, session).to_dict() | {"seconds": 0} for c in (CASE, other)]
    assert len(judge.calls) == calls and grouped == alone  # run read nothing again


SUPPORT = {("Fares go up.", "in May"): 0.9, ("The council gathered.", "Monday"): 0.8}


class SentenceJudge(FakeJudge):
    """P(Yes) high only where the piece read supports the sentence asked."""

    def choose(self, prompt, options):
        self.calls.append(("choose", prompt, tuple(options)))
        text = "".join(prompt.blocks)
        yes = max(
            [p for (claim, where), p in SUPPORT.items() if claim in text and where in text],
            default=0.1,
        )
        probs = [1 - yes, yes] if options[0].lower().startswith("no") else [yes, 1 - yes]
        best = max(range(2), key=lambda i: probs[i])
        return ChoiceResult(tuple(options), tuple(probs), best, Usage(10, 5, 5, 1), 0.001)


def _each_sentence(aggregate: str = "min") -> ChunkedMetric:
    document = ChunkedMetric("D", load_metric(CHUNKED).metric, words=10)
    return ChunkedMetric("S", document, field="actual_output", sentences=True, aggregate=aggregate)


def test_each_sentence_of_a_summary_is_asked_of_every_piece_and_the_least_supported_counts():
    assert pieces("One. Two words. Three", 1) == ["One.", "Two words.", "Three"]
    case = LLMTestCase(input=DOC, actual_output="The council gathered. Fares go up.")
    metric = _each_sentence()
    metric.measure(case, SentenceJudge())
    trace = metric.trace.to_dict()
    assert trace["scores"] == pytest.approx([0.8, 0.9])  # each sentence's best piece
    assert metric.score == pytest.approx(0.8) and trace["chosen"] == 0
    assert trace["member"]["scores"] == pytest.approx([0.8, 0.1, 0.1])  # its pieces
    wrong = LLMTestCase(input=DOC, actual_output="Fares go up. The mayor stayed.")
    metric.measure(wrong, SentenceJudge())
    assert metric.score == pytest.approx(0.1) and metric.trace.to_dict()["chosen"] == 1
    mean = _each_sentence("mean")
    mean.measure(wrong, SentenceJudge())
    assert mean.score == pytest.approx(0.5)
    one = LLMTestCase(input=DOC, actual_output="Fares go up.")  # one sentence: as the member
    metric.measure(one, SentenceJudge())
    alone = ChunkedMetric("D", load_metric(CHUNKED).metric, words=10)
    alone.measure(one, SentenceJudge())
    assert metric.score == alone.score == pytest.approx(0.9)


def test_sentences_round_trip_and_words_beside_them_are_refused():
    data = _each_sentence().to_dict()
    assert data["sentences"] is True and "words" not in data
    assert metric_from_dict(data).to_dict() == data
    with pytest.raises(MetricDefinitionError, match="not both"):
        metric_from_dict({**data, "words": 20})
    with pytest.raises(MetricDefinitionError, match="'sentences' must be true or false"):
        metric_from_dict({**data, "sentences": "yes"})


def test_the_shipped_sentence_file_reads_the_chunked_file_for_each_sentence():
    metric = load_metric(CHUNKED.parent / "faithfulness_sentences.toml")
    assert metric.sentences and metric.field == "actual_output" and metric.aggregate == "min"
    assert metric.metric.to_dict() == {**load_metric(CHUNKED).to_dict()}
    assert metric.model == "smollm2-135m-faithful"


def test_a_group_asks_every_sentence_of_a_piece_before_the_next_piece_with_the_same_results():
    from anvil_local.models.sessions import as_session

    cases = [
        LLMTestCase(input=DOC, actual_output="The council gathered. Fares go up."),
        LLMTestCase(input=DOC, actual_output="The mayor stayed. Fares go up."),
    ]
    alone = []
    for case in cases:
        metric = _each_sentence()
        metric.measure(case, SentenceJudge())
        alone.append(metric.result.to_dict() | {"seconds": 0})
    judge = SentenceJudge()
    session = as_session(judge, None)
    metric = _each_sentence()
    metric.prepare(cases, session)
    read = ["".join(p.blocks) for _, p, _ in judge.calls]
    assert len(read) == 12  # 4 sentences x 3 pieces, each once
    assert all("Monday" in text for text in read[:4])  # the first piece for every sentence
    assert all("in May" in text for text in read[8:])  # then the last
    calls = len(judge.calls)
    grouped = [metric.run(c, session).to_dict() | {"seconds": 0} for c in cases]
    assert len(judge.calls) == calls and grouped == alone  # run read nothing again
