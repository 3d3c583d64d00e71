"""Reading case files: JSONL, CSV, JSON arrays, --field mapping, errors with line numbers."""

import json
from pathlib import Path

import pytest

from anvil_local.errors import DataError
from anvil_local.run.dataset import parse_field_map, read_cases


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_jsonl_with_extra_columns_and_default_ids(tmp_path: Path):
    path = write(
        tmp_path,
        "c.jsonl",
        "\n".join(
            [
                json.dumps({"input": "doc", "actual_output": "sum", "labels": {"coherence": 4.3}}),
                "",
                json.dumps(
                    {"id": 7, "input": "doc", "actual_output": "other", "context": "one chunk"}
                ),
            ]
        ),
    )
    rows = read_cases(path)
    assert [r.case_id for r in rows] == ["line-1", "7"]
    assert [r.line for r in rows] == [1, 3]
    assert rows[0].case.metadata == {"labels": {"coherence": 4.3}}
    assert rows[1].case.context == ["one chunk"]


def test_field_mapping_reads_other_column_names(tmp_path: Path):
    path = write(tmp_path, "c.csv", "doc_text,summary,key\nThe doc.,The sum.,k1\n")
    rows = read_cases(path, parse_field_map(["input=doc_text", "actual_output=summary", "id=key"]))
    case = rows[0].case
    assert (case.input, case.actual_output, case.id) == ("The doc.", "The sum.", "k1")


def test_json_array(tmp_path: Path):
    path = write(tmp_path, "c.json", json.dumps([{"input": "a", "actual_output": "b"}]))
    assert read_cases(path)[0].case_id == "item-1"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        pytest.param(
            "c.jsonl", '{"input": "a"}\n{"input": \n', r"c.jsonl:2: invalid JSON", id="bad-line"
        ),
        pytest.param(
            "c.jsonl",
            '{"id": "x", "input": "a"}\n{"id": "x", "input": "b"}\n',
            r"c.jsonl:2: duplicate case id 'x' \(first on line 1\)",
            id="duplicate-id",
        ),
        pytest.param(
            "c.jsonl", "[1, 2]\n", r"c.jsonl:1: a test case must be a JSON object", id="not-object"
        ),
        pytest.param(
            "c.jsonl", '{"input": 3}\n', r"c.jsonl:1: input must be a string", id="wrong-type"
        ),
        pytest.param("c.jsonl", "\n", r"no test cases", id="empty"),
        pytest.param("c.json", '{"input": "a"}', r"holds an array", id="json-not-array"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path: Path, name: str, text: str, message: str):
    with pytest.raises(DataError, match=message):
        read_cases(write(tmp_path, name, text))


def test_bad_field_mappings():
    with pytest.raises(DataError, match="expects param=column"):
        parse_field_map(["input"])
    with pytest.raises(DataError, match="'outputs' is not a test-case field"):
        parse_field_map(["outputs=summary"])
