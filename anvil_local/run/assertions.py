"""assert_test: gate a test suite on metrics (DeepEval's name and behaviour)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anvil_local.metrics.base import BaseMetric
from anvil_local.testcase import LLMTestCase


def assert_test(
    test_case: LLMTestCase,
    metrics: Sequence[BaseMetric],
    *,
    model: str | Path | Any = None,
    use_cache: bool = True,
) -> None:
    """Run every metric on the case; raise AssertionError listing each one that failed
    (score below threshold, or an error), with score, threshold and reason."""
    from anvil_local.run.evaluate import evaluate

    outcome = evaluate([test_case], metrics, model=model, use_cache=use_cache)
    by_name = {line.metric: line.result for line in outcome.lines}
    failures = []
    for metric in metrics:
        result = by_name[metric.name]
        metric.result = result
        metric.score, metric.success, metric.reason = result.score, result.success, result.reason
        metric.error = result.error
        if result.error is not None:
            failures.append(f"{metric.name}: error: {result.error}")
        elif not result.success:
            failures.append(
                f"{metric.name}: score {result.score:.3f} < threshold {result.threshold}"
                + (f" (reason: {result.reason})" if result.reason else "")
            )
    if failures:
        raise AssertionError("Metrics failed:\n" + "\n".join(f"- {f}" for f in failures))
