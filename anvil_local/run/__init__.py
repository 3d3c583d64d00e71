"""Running metrics over datasets: evaluate(), assert_test(), case files, results files."""

from anvil_local.run.arena_compare import compare
from anvil_local.run.assertions import assert_test
from anvil_local.run.dataset import CaseRow, parse_field_map, read_cases
from anvil_local.run.evaluate import evaluate
from anvil_local.run.goldens import EvaluationDataset, Golden
from anvil_local.run.records import EvaluationResult, MetricSummary, ResultLine

__all__ = [
    "CaseRow",
    "EvaluationDataset",
    "EvaluationResult",
    "Golden",
    "MetricSummary",
    "ResultLine",
    "assert_test",
    "compare",
    "evaluate",
    "parse_field_map",
    "read_cases",
]
