"""`merge_results`: shard results files joined into what one unsharded run would write."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from anvil_local.errors import DataError
from anvil_local.judge.results import Usage
from anvil_local.metrics import MetricResult
from anvil_local.run.merge import MergeReport, merge_results
from anvil_local.run.output import ResultWriter
from anvil_local.run.records import ResultLine

MODEL = "qwen-judge-q4"
SHA = "a" * 64
CASES = ["alpha", "beta", "gamma", "delta"]
METRICS = ["Correctness", "Tone"]


def line(
    position: int,
    metric: str,
    *,
    score: float | None = 0.75,
    error: str | None = None,
    model: str = MODEL,
    sha: str = SHA,
    case_id: str | None = None,
) -> dict[str, Any]:
    """One result line exactly as `anvil eval` writes it."""
    result = MetricResult(
        metric=metric,
        score=None if error else score,
        success=None if error else (score or 0) >= 0.5,
        threshold=0.5,
        reason=None if error else f"réponse {position}/{metric} — ok",
        trace={"steps": [position, metric]},
        usage=Usage(100 + position, 10, 90, 2),
        seconds=1.23456,
        error=error,
    )
    case = CASES[position] if case_id is None else case_id
    return ResultLine(position, case, result, model, sha).to_dict()


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    writer = ResultWriter(path)
    for item in lines:
        writer.write(item)
    writer.close()
    return path


def text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in lines)


def test_two_shards_merge_into_the_whole_run_sorted(tmp_path: Path) -> None:
    whole = [line(p, m, score=0.1 * (p + 1) + 0.05) for p in range(4) for m in METRICS]
    # shard 1/2 has positions 0 and 2, shard 2/2 has 1 and 3; both finish out of order
    shard1 = [whole[4], whole[0], whole[5], whole[1]]
    shard2 = [whole[7], whole[2], whole[3], whole[6]]
    a = write(tmp_path / "shard1.jsonl", shard1)
    b = write(tmp_path / "shard2.jsonl", shard2)
    out = tmp_path / "out" / "merged.jsonl"

    report = merge_results([a, b], out)

    # metrics first appear as Correctness (whole[4]) then Tone: the run's order
    assert out.read_text(encoding="utf-8") == text(whole)
    assert out.read_bytes() == write(tmp_path / "whole.jsonl", whole).read_bytes()
    assert report == MergeReport(
        lines=8, duplicates=0, missing=[], errors=0, model=MODEL, model_sha256=SHA
    )
    assert sorted(p.name for p in out.parent.iterdir()) == ["merged.jsonl"]  # no temp left


def test_metric_order_is_first_appearance_not_alphabetical(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(1, "Tone"), line(1, "Correctness")])
    b = write(tmp_path / "b.jsonl", [line(0, "Correctness"), line(0, "Tone")])
    out = tmp_path / "m.jsonl"
    merge_results([a, b], out)
    assert out.read_text(encoding="utf-8") == text(
        [line(0, "Tone"), line(0, "Correctness"), line(1, "Tone"), line(1, "Correctness")]
    )


def test_success_replaces_an_error_line_of_the_same_pair(tmp_path: Path) -> None:
    failed = line(0, "Tone", error="judge crashed")
    fixed = line(0, "Tone", score=0.9)
    a = write(tmp_path / "a.jsonl", [failed, line(0, "Correctness")])
    b = write(tmp_path / "b.jsonl", [fixed])
    out = tmp_path / "m.jsonl"

    report = merge_results([a, b], out)

    # Tone appeared first (in the dropped error line), so it sorts first
    assert out.read_text(encoding="utf-8") == text([fixed, line(0, "Correctness")])
    assert (report.lines, report.duplicates, report.errors) == (2, 1, 0)


def test_a_later_error_does_not_replace_a_success(tmp_path: Path) -> None:
    ok = line(0, "Tone", score=0.9)
    a = write(tmp_path / "a.jsonl", [ok])
    b = write(tmp_path / "b.jsonl", [line(0, "Tone", error="timeout")])
    out = tmp_path / "m.jsonl"
    report = merge_results([a, b], out)
    assert out.read_text(encoding="utf-8") == text([ok])
    assert (report.lines, report.duplicates, report.errors) == (1, 1, 0)


def test_between_two_successes_the_first_input_wins(tmp_path: Path) -> None:
    first = line(0, "Tone", score=0.9)
    second = line(0, "Tone", score=0.2)
    a = write(tmp_path / "a.jsonl", [first])
    b = write(tmp_path / "b.jsonl", [second, line(1, "Tone")])
    c = write(tmp_path / "c.jsonl", [line(0, "Tone", score=0.3)])
    out = tmp_path / "m.jsonl"
    report = merge_results([a, b, c], out)
    assert out.read_text(encoding="utf-8") == text([first, line(1, "Tone")])
    assert (report.lines, report.duplicates) == (2, 2)

    report = merge_results([b, a], out)  # input order decides
    assert out.read_text(encoding="utf-8") == text([second, line(1, "Tone")])


def test_error_lines_are_kept_and_counted_when_nothing_better_exists(tmp_path: Path) -> None:
    first = line(0, "Tone", error="context overflow")
    a = write(tmp_path / "a.jsonl", [first, line(1, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(0, "Tone", error="other")])
    out = tmp_path / "m.jsonl"
    report = merge_results([a, b], out)
    assert out.read_text(encoding="utf-8") == text([first, line(1, "Tone")])
    assert (report.lines, report.duplicates, report.errors, report.missing) == (2, 1, 1, [])


def test_mixed_models_are_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(1, "Tone"), line(2, "Tone", model="other", sha="b" * 64)])
    out = tmp_path / "m.jsonl"
    with pytest.raises(DataError) as info:
        merge_results([a, b], out)
    message = str(info.value)
    assert str(a) in message and str(b) in message
    assert MODEL in message and "other" in message and "line 2" in message
    assert not out.exists()


def test_same_name_different_checksum_is_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(1, "Tone", sha="c" * 64)])
    with pytest.raises(DataError, match=r"aaaaaaaaaaaa.*cccccccccccc"):
        merge_results([a, b], tmp_path / "m.jsonl")


def test_missing_pairs_without_expected_are_cases_seen_times_metrics_seen(
    tmp_path: Path,
) -> None:
    a = write(tmp_path / "a.jsonl", [line(2, "Tone"), line(0, "Correctness"), line(0, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(3, "Correctness", error="boom")])
    report = merge_results([a, b], tmp_path / "m.jsonl")
    # cases by position (alpha, gamma, delta), metrics by first appearance (Tone, Correctness)
    assert report.missing == [("gamma", "Correctness"), ("delta", "Tone")]
    assert (report.lines, report.errors) == (4, 1)


def test_missing_pairs_with_expected_are_in_declared_order(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone"), line(1, "Tone", error="boom")])
    expected = [
        ("delta", "Tone"),
        ("beta", "Tone"),  # present as an error: present
        ("alpha", "Correctness"),
        ("alpha", "Tone"),
        ("delta", "Tone"),  # listed twice: reported once
        ("zeta", "Tone"),
    ]
    report = merge_results([a], tmp_path / "m.jsonl", expected=expected)
    assert report.missing == [("delta", "Tone"), ("alpha", "Correctness"), ("zeta", "Tone")]


def test_torn_last_line_is_ignored_and_the_input_left_untouched(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone"), line(1, "Tone")])
    whole_tail = json.dumps(line(2, "Tone"), ensure_ascii=False).encode()
    with a.open("ab") as handle:
        handle.write(whole_tail[:40])  # killed mid-write
    before = a.read_bytes()
    b = tmp_path / "b.jsonl"
    b.write_bytes(whole_tail)  # a whole last line whose newline is missing: kept
    out = tmp_path / "m.jsonl"

    report = merge_results([a, b], out)

    assert out.read_text(encoding="utf-8") == text(
        [line(0, "Tone"), line(1, "Tone"), line(2, "Tone")]
    )
    assert report.lines == 3
    assert a.read_bytes() == before
    assert b.read_bytes() == whole_tail


def test_a_garbage_line_is_refused_with_file_and_line(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    with a.open("a", encoding="utf-8") as handle:
        handle.write("\n")  # blank lines are skipped but counted
        handle.write("this is not json\n")
        handle.write(json.dumps(line(1, "Tone")) + "\n")
    out = tmp_path / "m.jsonl"
    with pytest.raises(DataError, match="^" + re.escape(f"{a}:3: not a result line")):
        merge_results([a], out)
    assert not out.exists()


@pytest.mark.parametrize(
    "item",
    [
        ["a", "list"],
        {"case_id": "alpha", "metric": "Tone"},  # no position
        {"position": "0", "case_id": "alpha", "metric": "Tone"},
        {"position": 0, "metric": "Tone"},
    ],
)
def test_json_that_is_not_a_result_line_is_refused(tmp_path: Path, item: Any) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text(json.dumps(line(0, "Tone")) + "\n" + json.dumps(item) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="^" + re.escape(f"{a}:2: not a result line")):
        merge_results([a], tmp_path / "m.jsonl")


def test_out_being_an_input_is_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(1, "Tone")])
    before = b.read_bytes()
    (tmp_path / "sub").mkdir()
    with pytest.raises(DataError, match="is one of the files to merge"):
        merge_results([a, b], tmp_path / "sub" / ".." / "b.jsonl")
    assert b.read_bytes() == before


def test_no_inputs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no results files to merge"):
        merge_results([], tmp_path / "m.jsonl")
    assert not (tmp_path / "m.jsonl").exists()


def test_a_missing_input_is_refused_by_name(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    gone = tmp_path / "gone.jsonl"
    with pytest.raises(DataError) as info:
        merge_results([a, gone], tmp_path / "m.jsonl")
    assert str(info.value) == f"{gone}: cannot read: No such file or directory"
    assert "\n" not in str(info.value)


def test_a_directory_input_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="^" + re.escape(f"{tmp_path}: cannot read")):
        merge_results([tmp_path], tmp_path / "m.jsonl")


def test_shards_of_different_case_files_are_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [line(0, "Tone")])
    b = write(tmp_path / "b.jsonl", [line(3, "Tone", case_id="alpha")])
    with pytest.raises(DataError, match=r"case 'alpha' is at position 0 .* but at 3"):
        merge_results([a, b], tmp_path / "m.jsonl")
    c = write(tmp_path / "c.jsonl", [line(0, "Correctness", case_id="omega")])
    with pytest.raises(DataError, match=r"position 0 is case 'alpha' .* but 'omega'"):
        merge_results([a, c], tmp_path / "m.jsonl")


def test_an_existing_out_is_replaced_and_empty_inputs_give_an_empty_file(
    tmp_path: Path,
) -> None:
    out = write(tmp_path / "m.jsonl", [line(0, "Tone")])
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    report = merge_results([empty], out)
    assert out.read_bytes() == b""
    assert report == MergeReport(lines=0, duplicates=0, missing=[], errors=0)
    report = merge_results([empty], out, expected=[("alpha", "Tone")])
    assert report.missing == [("alpha", "Tone")]
