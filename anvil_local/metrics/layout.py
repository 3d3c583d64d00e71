"""Prompt blocks built from a test case (pure; shared by every metric).

Every metric's prompt on a case starts with the same header and the same field blocks in the
same order, so the judge prefills a case once however many metrics or nodes look at it.
"""

from __future__ import annotations

from collections.abc import Iterable

from anvil_local.judge.prompt import HEADER
from anvil_local.testcase import LLMTestCase, SingleTurnParams, ordered_params, render_param


def case_blocks(case: LLMTestCase, params: Iterable[SingleTurnParams]) -> tuple[str, ...]:
    """HEADER, then one block per field (shared fields such as the input first)."""
    blocks = [HEADER]
    for param in ordered_params(list(params)):
        value = case.get(param)
        if value is not None:
            blocks.append(render_param(param, value))
    return tuple(blocks)


def fields_phrase(params: Iterable[SingleTurnParams]) -> str:
    """ "the Input and the Actual Output" for use inside a question."""
    from anvil_local.testcase import param_title

    names = [f"the {param_title(p)}" for p in ordered_params(list(params))]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
