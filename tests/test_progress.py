"""The one progress sink, driven by evaluate() on a scripted judge: result lines streamed,
a line of progress at the first and last result and every `every` seconds, or one bar
redrawn in place; counts start again with each run."""

import io
import json
import re

from anvil_local import GEval, LLMTestCase, SingleTurnParams, evaluate
from anvil_local.run.sinks import ProgressSink
from tests.fakes import FakeJudge

SCORES = {"Score (": [0.0] * 8 + [0.5, 0.5, 0.0]}
LINE = re.compile(r"^judging (\d+)/(\d+) \((\d+)%\), \d+\.\d\d s/result, about \d+ s left$")


def geval() -> GEval:
    steps = ["Read."]
    return GEval("Coherence", [SingleTurnParams.ACTUAL_OUTPUT], evaluation_steps=steps)


def cases(n: int) -> list[LLMTestCase]:
    return [LLMTestCase(input="q", actual_output=f"answer {i}", id=f"c{i}") for i in range(n)]


def run(n: int, sink: ProgressSink) -> None:
    evaluate(cases(n), [geval()], model=FakeJudge(scores=SCORES), sinks=[sink], use_cache=False)


def test_in_logs_a_line_at_the_first_and_the_last_result():
    stream = io.StringIO()
    run(4, ProgressSink(stream=stream, every=3600))
    shown = [LINE.match(x).groups() for x in stream.getvalue().splitlines()]
    assert shown == [("1", "4", "25"), ("4", "4", "100")]


def test_in_logs_a_line_for_every_result_when_every_is_zero():
    stream = io.StringIO()
    run(3, ProgressSink(stream=stream, every=0))
    assert [LINE.match(x).group(1) for x in stream.getvalue().splitlines()] == ["1", "2", "3"]


def test_on_a_terminal_one_bar_redrawn_and_ended_before_what_follows():
    stream = io.StringIO()
    run(3, ProgressSink(stream=stream, bar=True))
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    last = text.rsplit("\r", 1)[1]
    assert last.startswith("judging  [" + "#" * 24 + "]  3/3  ") and "s/result" in last


def test_result_lines_stream_as_json_and_on_line_sees_each():
    results = io.StringIO()
    seen = []
    run(2, ProgressSink(lambda line, done, total: seen.append((done, total)), results=results))
    lines = [json.loads(x) for x in results.getvalue().splitlines()]
    assert [(x["case_id"], x["metric"]) for x in lines] == [
        ("c0", "Coherence"),
        ("c1", "Coherence"),
    ]
    assert seen == [(1, 2), (2, 2)]


def test_one_sink_follows_several_runs_from_the_start_of_each():
    stream = io.StringIO()
    sink = ProgressSink(stream=stream, every=3600)
    run(2, sink)
    run(3, sink)
    shown = [LINE.match(x).group(1, 2) for x in stream.getvalue().splitlines()]
    assert shown == [("1", "2"), ("2", "2"), ("1", "3"), ("3", "3")]


def test_nothing_shown_without_a_stream():
    sink = ProgressSink()
    run(2, sink)
    assert sink.done == 2 and sink.total == 2
