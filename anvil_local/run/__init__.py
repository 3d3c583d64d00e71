"""Running metrics over datasets: evaluate(), assert_test(), case files, results files."""

from anvil_local.run.assertions import assert_test
from anvil_local.run.dataset import CaseRow, parse_field_map, read_cases
from anvil_local.run.evaluate import evaluate
from anvil_local.run.records import EvaluationResult, MetricSummary, ResultLine

__all__ = [
    "CaseRow",
    "EvaluationResult",
    "MetricSummary",
    "ResultLine",
    "assert_test",
    "evaluate",
    "parse_field_map",
    "read_cases",
]
