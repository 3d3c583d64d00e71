"""Reading test cases: JSONL (one case per line), a JSON array, or CSV.

Columns use DeepEval's field names; `--field param=column` maps other names. Columns that are
not test-case fields go to the case's metadata. Every error names the file and line.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anvil_local.arena import ARENA_FIELDS, ArenaTestCase
from anvil_local.conversation import ALIASES, CONVERSATION_FIELDS, ConversationalTestCase
from anvil_local.errors import DataError, not_utf8
from anvil_local.testcase import CASE_FIELDS, LLMTestCase

#: Any kind of test case a case file holds: a single-turn case, a conversation (`turns`),
#: or an arena of contestants (`contestants`).
TestCase = LLMTestCase | ConversationalTestCase | ArenaTestCase
_CASE_FIELDS = set(CASE_FIELDS)
_KNOWN_FIELDS = _CASE_FIELDS | set(CONVERSATION_FIELDS) | set(ARENA_FIELDS)
# CSV cells may hold whole documents: lift the csv module's 128 KiB default cell limit.
csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class CaseRow:
    """A case with where it came from: its position in the file (0-based) and line."""

    position: int
    line: int
    case: TestCase

    @property
    def case_id(self) -> str:
        return self.case.id  # always set by read_cases


def parse_field_map(items: Iterable[str]) -> dict[str, str]:
    """["input=document", ...] -> {"input": "document"}."""
    mapping: dict[str, str] = {}
    for item in items:
        target, sep, column = item.partition("=")
        target, column = target.strip(), column.strip()
        if not sep or not target or not column:
            raise DataError(f"--field expects param=column, got {item!r}")
        if target not in _KNOWN_FIELDS:
            raise DataError(
                f"--field {item!r}: {target!r} is not a test-case field "
                f"(one of: {', '.join(sorted(_KNOWN_FIELDS))})"
            )
        mapping[target] = column
    return mapping


def case_from_row(row: dict[str, Any], mapping: dict[str, str], where: str) -> TestCase:
    """The case a row describes: a conversation when it has `turns`, an arena when it has
    `contestants`, else a single-turn case. Columns that are not fields of its kind go to
    its metadata."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: a test case must be a JSON object")
    _check_unicode(row, where)
    if mapping.get("turns", "turns") in row:
        row = {ALIASES.get(k, k): v for k, v in row.items()}
        cls, fields = ConversationalTestCase, CONVERSATION_FIELDS
    elif mapping.get("contestants", "contestants") in row:
        cls, fields = ArenaTestCase, ARENA_FIELDS
    else:
        cls, fields = LLMTestCase, CASE_FIELDS
    used_columns = set()
    kwargs: dict[str, Any] = {}
    for name in fields:
        column = mapping.get(name, name)
        if column in row and row[column] is not None and row[column] != "":
            kwargs[name] = row[column]
            used_columns.add(column)
    if kwargs.get("metadata") is not None and not isinstance(kwargs["metadata"], dict):
        raise DataError(f"{where}: metadata must be an object")
    extra = {k: v for k, v in row.items() if k not in used_columns}
    if extra:
        kwargs["metadata"] = {**extra, **(kwargs.get("metadata") or {})}
    if "id" in kwargs:
        if not isinstance(kwargs["id"], str | int) or isinstance(kwargs["id"], bool):
            raise DataError(
                f"{where}: id must be a string or a whole number, got {type(kwargs['id']).__name__}"
            )
        kwargs["id"] = str(kwargs["id"])
    if isinstance(kwargs.get("tags"), str):
        kwargs["tags"] = [kwargs["tags"]]
    try:
        return cls(**kwargs)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from exc


def case_from_dict(data: dict[str, Any]) -> TestCase:
    """A case as its `to_dict()` wrote it (workers receive cases this way)."""
    if "turns" in data:
        return ConversationalTestCase.from_dict(data)
    if "contestants" in data:
        return ArenaTestCase.from_dict(data)
    return LLMTestCase.from_dict(data)


def _check_unicode(row: dict[str, Any], where: str) -> None:
    """JSON may spell a lone UTF-16 surrogate ("\\ud800"), which is no Unicode text: it
    could be neither tokenized nor written to a results file."""
    try:
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        raise DataError(f"{where}: holds a lone surrogate ({bad}), not Unicode text") from None


def _rows(path: Path) -> Iterable[tuple[int, Any]]:
    try:
        yield from _decoded_rows(path)
    except UnicodeDecodeError as exc:
        raise DataError(not_utf8(path, exc)) from exc
    except csv.Error as exc:
        raise DataError(f"{path}: not a readable CSV file: {exc}") from exc


def _decoded_rows(path: Path) -> Iterable[tuple[int, Any]]:
    suffix = path.suffix.lower()
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError as exc:
        raise DataError(f"{path}: no such file") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror}") from exc
    with handle:
        if suffix == ".csv":
            reader = csv.DictReader(handle)
            for row in reader:
                yield reader.line_num, row
        elif suffix == ".json":
            try:
                data = json.load(handle)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
            if not isinstance(data, list):
                raise DataError(f"{path}: a .json case file holds an array of test cases")
            for index, row in enumerate(data, 1):
                yield index, row
        else:
            for number, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                try:
                    yield number, json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}:{number}: invalid JSON: {exc.msg}") from exc


def read_cases(path: str | Path, mapping: dict[str, str] | None = None) -> list[CaseRow]:
    """All cases of a file; ids default to "line-N" and must be unique."""
    path = Path(path)
    mapping = mapping or {}
    rows: list[CaseRow] = []
    seen: dict[str, int] = {}
    unit = "item" if path.suffix.lower() == ".json" else "line"
    for line, raw in _rows(path):
        case = case_from_row(raw, mapping, f"{path}:{line}")
        if case.id is None:
            case.id = f"{unit}-{line}"
        if case.id in seen:
            raise DataError(
                f"{path}:{line}: duplicate case id {case.id!r} (first on {unit} {seen[case.id]})"
            )
        seen[case.id] = line
        rows.append(CaseRow(position=len(rows), line=line, case=case))
    if not rows:
        raise DataError(f"{path}: no test cases")
    return rows


def rows_from_cases(cases: Iterable[TestCase]) -> list[CaseRow]:
    """Python-API cases as rows; cases without an id get "case-N" (1-based)."""
    rows = []
    seen: set[str] = set()
    for position, case in enumerate(cases):
        if not isinstance(case, LLMTestCase | ConversationalTestCase | ArenaTestCase):
            raise DataError(
                f"test case {position} is a {type(case).__name__}, not an LLMTestCase, "
                "ConversationalTestCase or ArenaTestCase"
            )
        if case.id is None:
            case = dataclasses.replace(case, id=f"case-{position + 1}")
        if case.id in seen:
            raise DataError(f"duplicate test case id {case.id!r}")
        seen.add(case.id)
        rows.append(CaseRow(position=position, line=position + 1, case=case))
    return rows
