"""Both headings DAGs read headings as a person writes them, whatever the case or markup:
`INTRO`, `## Body`, `**Conclusion**`, `Intro:`, `intro`. The code DAG here (no model: its
nodes are code); the trained judge's DAG on the real adapter in test_model_headings.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil_local import LLMTestCase, load_metric
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
BODIES = {
    "Intro": "The platform team met to plan the week.",
    "Body": "Ana will finish the cache migration; Bo will review the API changes.",
    "Conclusion": "The team agreed to ship on Friday.",
}
STYLES = {
    "capitals": lambda h: h.upper(),
    "markdown": lambda h: f"## {h}",
    "bold": lambda h: f"**{h}**",
    "colon": lambda h: f"{h}:",
    "lower case": lambda h: h.lower(),
    "bold colon": lambda h: f"**{h}:**",
}
ORDERS = {
    "in order": ["Intro", "Body", "Conclusion"],
    "not all there": ["Intro", "Body"],
    "out of order": ["Conclusion", "Intro", "Body"],
}
#: The code DAG's score at each leaf (two out of place and all three differ there).
CODE_SCORE = {"in order": 1.0, "not all there": 0.0, "out of order": 0.2}


def styled(style: str, leaf: str) -> str:
    write = STYLES[style]
    return "\n\n".join(f"{write(h)}\n{BODIES[h]}" for h in ORDERS[leaf])


def style_cases() -> list:
    return [pytest.param(style, leaf, id=f"{style}-{leaf}") for style in STYLES for leaf in ORDERS]


@pytest.mark.parametrize(("style", "leaf"), style_cases())
def test_the_code_dag_reads_headings_in_any_case_or_markup(style, leaf):
    metric = load_metric(ROOT / "examples" / "headings.toml")
    case = LLMTestCase(
        input="Notes of the weekly planning meeting.", actual_output=styled(style, leaf)
    )
    assert metric.measure(case, FakeJudge()) == CODE_SCORE[leaf]
