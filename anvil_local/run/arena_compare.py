"""DeepEval's `compare(test_cases, metric)`: an ArenaGEval over several arenas, returning
how many each contestant won.

DeepEval's config objects are read for what they can change here: `error_config`'s
`ignore_errors` (an arena the judge cannot judge is skipped, not raised) and
`skip_on_missing_params` (an arena missing a field the metric needs is skipped); the async
and display configs change nothing (the judge runs in this process).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from anvil_local.arena import ArenaTestCase
from anvil_local.errors import AnvilError, DataError, MissingParamError
from anvil_local.metrics import ArenaGEval

log = logging.getLogger(__name__)


def compare(
    test_cases: Sequence[ArenaTestCase],
    metric: ArenaGEval,
    name: str = "compare()",
    async_config: Any = None,
    display_config: Any = None,
    error_config: Any = None,
    *,
    judge: Any = None,
) -> dict[str, int]:
    """Judge every arena with `metric`; {contestant name: arenas won}, most wins first.
    `judge` is what `metric.measure` takes (a session, a Judge, a model name or path)."""
    if not isinstance(metric, ArenaGEval):
        raise DataError(f"compare() takes an ArenaGEval, got {type(metric).__name__}")
    ignore_errors = bool(getattr(error_config, "ignore_errors", False))
    skip_missing = bool(getattr(error_config, "skip_on_missing_params", False))
    wins: Counter[str] = Counter()
    for case in test_cases:
        if not isinstance(case, ArenaTestCase):
            raise DataError(f"compare() takes ArenaTestCases, got {type(case).__name__}")
        try:
            wins[metric.measure(case, judge)] += 1
        except MissingParamError as exc:
            if not (skip_missing or ignore_errors):
                raise
            log.warning("%s: skipped an arena: %s", name, exc)
        except AnvilError as exc:
            if not ignore_errors:
                raise
            log.warning("%s: skipped an arena: %s", name, exc)
    return dict(wins.most_common())
