"""DeepEval's EvaluationDataset and Golden over our case files, so DeepEval's loop ports:
read goldens, build a test case from each (with your app's output), then
`evaluate(dataset, metrics)` (or `evaluate(dataset.test_cases, metrics)`).

A golden is a case before the app under test has answered. Test cases are read with the
same reader as `anvil eval` (JSONL, a JSON array or CSV, DeepEval's field names). What needs
Confident AI's service (push, pull, queue, versions) is refused in one line: the judge runs
offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from anvil_local.conversation import ConversationalTestCase
from anvil_local.errors import DataError, UnsupportedFeature, io_error
from anvil_local.run.dataset import TestCase, read_cases
from anvil_local.testcase import LLMTestCase, refuse_images

OFFLINE = "this judge runs offline, with no Confident AI service"


@dataclass
class Golden:
    """DeepEval's Golden: an input and what is known about it before the app answers."""

    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    additional_metadata: dict[str, Any] | None = None
    comments: str | None = None
    tools_called: list[str] | None = None
    expected_tools: list[str] | None = None
    token_cost: float | None = None
    input_token_count: int | None = None
    output_token_count: int | None = None
    source_file: str | None = None
    name: str | None = None
    custom_column_key_values: dict[str, str] | None = None
    expectations: Any = None
    expected_labels: dict[str, str] | None = None
    multimodal: bool = False
    images_mapping: dict[str, Any] | None = field(default=None, repr=False)
    id: str | None = None

    def __post_init__(self) -> None:
        if self.multimodal or self.images_mapping:
            raise UnsupportedFeature("a Golden holds images: this judge reads text only")
        refuse_images("a Golden", [self.input, self.expected_output, self.context])
        if not isinstance(self.input, str):
            raise DataError(f"a Golden's input must be a string, got {type(self.input).__name__}")


_GOLDEN_FIELDS = {f.name for f in fields(Golden)}


class EvaluationDataset:
    """DeepEval's EvaluationDataset: goldens in, test cases out, evaluated together."""

    def __init__(self, goldens: list[Golden] | None = None, confident_api_key: Any = None):
        if confident_api_key is not None:
            raise UnsupportedFeature(f"EvaluationDataset: confident_api_key: {OFFLINE}")
        self._goldens: list[Golden] = []
        self._test_cases: list[TestCase] = []
        for golden in goldens or []:
            self.add_golden(golden)

    @property
    def goldens(self) -> list[Golden]:
        return list(self._goldens)

    @property
    def test_cases(self) -> list[TestCase]:
        return list(self._test_cases)

    def add_golden(self, golden: Golden) -> None:
        if not isinstance(golden, Golden):
            raise DataError(f"add_golden takes a Golden, got {type(golden).__name__}")
        self._goldens.append(golden)

    def add_test_case(self, test_case: TestCase) -> None:
        if not isinstance(test_case, LLMTestCase | ConversationalTestCase):
            raise DataError(
                f"add_test_case takes an LLMTestCase or a ConversationalTestCase, got "
                f"{type(test_case).__name__}"
            )
        kinds = {type(c) for c in self._test_cases} | {type(test_case)}
        if len(kinds) > 1:
            raise DataError("a dataset holds single-turn or conversational cases, not both")
        self._test_cases.append(test_case)

    # -- files ---------------------------------------------------------------------------

    def add_test_cases_from_jsonl_file(self, file_path: str | Path) -> None:
        """Every case of one of our case files (JSONL, a JSON array or CSV)."""
        for row in read_cases(file_path):
            self.add_test_case(row.case)

    def add_test_cases_from_json_file(
        self, file_path: str | Path, input_key_name: str = "input", **key_names: Any
    ) -> None:
        """DeepEval's reader: `<field>_key_name=` names the key a field is read from."""
        mapping = {"input": input_key_name, **_mapping(key_names)}
        for row in read_cases(file_path, mapping):
            self.add_test_case(row.case)

    def add_goldens_from_jsonl_file(
        self, file_path: str | Path, input_key_name: str = "input", **key_names: Any
    ) -> None:
        """One golden per line; `<field>_key_name=` names the key a field is read from."""
        self._add_goldens(_json_rows(Path(file_path), lines=True), input_key_name, key_names)

    def add_goldens_from_json_file(
        self, file_path: str | Path, input_key_name: str = "input", **key_names: Any
    ) -> None:
        """A JSON array of goldens; `<field>_key_name=` names the key a field is read from."""
        self._add_goldens(_json_rows(Path(file_path), lines=False), input_key_name, key_names)

    def _add_goldens(self, rows: list[Any], input_key_name: str, key_names: Any) -> None:
        mapping = {"input": input_key_name, **_mapping(key_names)}
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise DataError(f"golden {number}: not a JSON object")
            data = {name: row[key] for name, key in mapping.items() if key in row}
            data |= {k: v for k, v in row.items() if k in _GOLDEN_FIELDS and k not in data}
            if "input" not in data:
                raise DataError(f"golden {number}: no {input_key_name!r} key")
            self.add_golden(Golden(**data))

    # -- Confident AI --------------------------------------------------------------------

    def _offline(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedFeature(f"EvaluationDataset: {OFFLINE}")

    push = pull = queue = create_version = get_versions = delete = _offline

    def evals_iterator(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedFeature(
            "EvaluationDataset.evals_iterator traces an app with Confident AI; add test cases "
            "and call evaluate(dataset, metrics)"
        )

    def __iter__(self) -> Iterator[TestCase]:
        return iter(self._test_cases)

    def __len__(self) -> int:
        return len(self._test_cases)

    def __repr__(self) -> str:
        return (
            f"EvaluationDataset(goldens={len(self._goldens)}, test_cases={len(self._test_cases)})"
        )


def _mapping(key_names: dict[str, Any]) -> dict[str, str]:
    """{"expected_output_key_name": "answer"} -> {"expected_output": "answer"} (None: the
    field is not read); DeepEval's delimiter and encoding keywords are not key names."""
    out: dict[str, str] = {}
    for keyword, key in key_names.items():
        if not keyword.endswith("_key_name"):
            continue  # encoding_type, *_col_delimiter: JSON needs neither
        name = keyword.removesuffix("_key_name")
        name = "additional_metadata" if name == "addtional_metadata" else name  # DeepEval's typo
        if key is not None:
            out[name] = key
    return out


def _json_rows(path: Path, lines: bool) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise io_error(path, exc, "cannot read") from exc
    try:
        if lines:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON array of goldens")
    return rows
