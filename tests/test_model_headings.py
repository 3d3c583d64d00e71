"""The trained judge's headings DAG reads headings as a person writes them, whatever the case
or markup, on the real adapter `smollm2-135m-headings`: each styled summary walks to the
leaf its headings call for, as the code DAG's does (test_headings_styles.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil_local import LLMTestCase, load_metric
from anvil_local.run.evaluate import evaluate
from tests.test_headings_styles import ORDERS, STYLES, styled

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
#: The trained DAG's score at each leaf (one "out of order" leaf).
TRAINED_SCORE = {"in order": 1.0, "not all there": 0.0, "out of order": 0.3}


def test_the_trained_dag_reads_headings_in_any_case_or_markup(real_data_dir):
    metric = load_metric(ROOT / "examples" / "small_judge" / "headings_trained.toml")
    cases = [
        LLMTestCase(
            input="Notes of the weekly planning meeting.",
            actual_output=styled(s, leaf),
            id=f"{s}|{leaf}",
        )
        for s in STYLES
        for leaf in ORDERS
    ]
    outcome = evaluate(cases, [metric], use_cache=False)
    wrong = [
        (line.case_id, line.result.score)
        for line in outcome.lines
        if line.result.score != TRAINED_SCORE[line.case_id.split("|")[1]]
    ]
    print(
        f"\n{len(cases) - len(wrong)} of {len(cases)} styled summaries on their leaf; wrong: {wrong}"
    )
    assert wrong == []
