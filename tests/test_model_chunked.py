"""The chunked faithfulness metric on the real default judge with the trained adapter: each
piece's score is the faithfulness question's own score on that piece alone, and the case's
score the best piece's; a run of a group reads the same numbers as one case at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (
    "The city council met on Monday evening to discuss the budget for next year. "
    "Members argued for two hours about the cost of repairing the old library. "
    "In the end the council voted to close the library for a year of repairs. "
    "The mayor said the building would reopen in the spring of next year. "
    "Separately, bus fares will rise by ten pence from the first of May, the transport "
    "office said, to pay for new buses on the northern routes. "
    "Drivers' unions said they welcomed the new buses but wanted more staff."
)


def test_pieces_are_read_as_the_question_alone_and_the_best_is_kept(real_data_dir: Path):
    from anvil_local import LLMTestCase, evaluate, load_metric
    from anvil_local.metrics.calibration import score_input
    from anvil_local.metrics.chunked import pieces

    chunked = load_metric(ROOT / "examples" / "small_judge" / "faithfulness_chunked.toml")
    chunked.words = 40  # three pieces of this short document
    question = load_metric(ROOT / "examples" / "small_judge" / "faithfulness.toml")
    claim = "Bus fares will go up by ten pence in May."
    parts = pieces(DOC, chunked.words)
    assert len(parts) == 3
    case = LLMTestCase(input=DOC, actual_output=claim, id="fares")
    other = LLMTestCase(input=DOC, actual_output="The library will close for a year.", id="lib")
    outcome = evaluate([case, other], [chunked], model=chunked.model, use_cache=False)
    results = {line.case_id: line.result for line in outcome.lines}
    trace = results["fares"].trace.to_dict()
    alone = evaluate(
        [LLMTestCase(input=p, actual_output=claim, id=str(i)) for i, p in enumerate(parts)],
        [question],
        model=chunked.model,
        use_cache=False,
    )
    expected = [score_input(line.result) for line in alone.lines]
    assert trace["scores"] == pytest.approx(expected, abs=1e-6)
    assert results["fares"].score == pytest.approx(max(expected), abs=1e-6)
    assert trace["chosen"] == expected.index(max(expected))
    chunked.measure(other, chunked.model)  # one case alone: the same numbers as in the group
    assert chunked.trace.to_dict()["scores"] == results["lib"].trace.to_dict()["scores"]
