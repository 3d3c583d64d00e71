"""evaluate() on a scripted judge: result lines, resume, cache keys, errors, JUnit."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from anvil_local import GEval, LLMTestCase, SingleTurnParams, assert_test, evaluate
from anvil_local.errors import ContextOverflow, DataError
from anvil_local.run.junit import junit_xml
from anvil_local.run.results import result_items
from tests.fakes import FakeJudge

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
SCORES = {"Score (": [0.0] * 8 + [0.5, 0.5, 0.0]}  # 8.5 / 10


def metric(name="Coherence", **kw) -> GEval:
    args = {
        "name": name,
        "evaluation_params": P,
        "evaluation_steps": ["Read."],
        "include_reason": False,
    }
    args.update(kw)
    return GEval(**args)


def cases(n: int, doc: str = "doc") -> list[LLMTestCase]:
    return [LLMTestCase(input=doc, actual_output=f"summary {i}", id=f"c{i}") for i in range(n)]


def read(path: Path) -> list[dict]:
    return result_items(path)  # the result lines, without the metadata line


def test_one_complete_line_per_case_and_metric(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    result = evaluate(
        cases(3), [metric(), metric("Fluency")], model=FakeJudge(scores=SCORES), out=out
    )
    lines = read(out)
    assert len(lines) == 6 and result.all_passed
    assert {(x["case_id"], x["metric"]) for x in lines} == {
        (f"c{i}", m) for i in range(3) for m in ("Coherence", "Fluency")
    }
    first = lines[0]
    assert first["score"] == pytest.approx(0.85) and first["success"] is True
    assert first["model"] == "fake-judge" and first["model_sha256"] == "a" * 64
    assert set(first) >= {"position", "threshold", "reason", "trace", "tokens", "seconds", "error"}


def test_rerun_resumes_without_duplicates(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out, use_cache=False)
    judge = FakeJudge(scores=SCORES)
    result = evaluate(cases(4), [metric()], model=judge, out=out, use_cache=False)
    assert result.resumed == 2 and len(judge.calls) == 2
    assert sorted(x["case_id"] for x in read(out)) == ["c0", "c1", "c2", "c3"]


def test_a_torn_last_line_is_dropped_and_its_pair_run_again(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out, use_cache=False)
    meta, first, second = out.read_text().splitlines()
    out.write_text(f"{meta}\n{first}\n{second[:25]}")  # killed in the middle of the second line
    judge = FakeJudge(scores=SCORES)
    evaluate(cases(2), [metric()], model=judge, out=out, use_cache=False)
    assert len(judge.calls) == 1
    assert [x["case_id"] for x in read(out)] == ["c0", "c1"]


def test_results_of_another_model_are_not_mixed_in(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    with pytest.raises(DataError, match="holds results of another model"):
        evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES, sha="b" * 64), out=out)


@pytest.mark.parametrize(
    ("change", "hit"),
    [
        pytest.param({}, True, id="same-everything"),
        pytest.param({"sha": "c" * 64}, False, id="model"),
        pytest.param({"metric": {"evaluation_steps": ["Read twice."]}}, False, id="metric-steps"),
        pytest.param({"metric": {"threshold": 0.9}}, False, id="metric-threshold"),
        pytest.param({"case": "another summary"}, False, id="case-content"),
        pytest.param({"reason": True}, False, id="reason-flag"),
        pytest.param({"no_cache": True}, False, id="no-cache"),
    ],
)
def test_cache_keys(change: dict, hit: bool):
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES))
    judge = FakeJudge(scores=SCORES, sha=change.get("sha", "a" * 64))
    case = LLMTestCase(input="doc", actual_output=change.get("case", "summary 0"), id="c0")
    result = evaluate(
        [case],
        [metric(**change.get("metric", {}))],
        model=judge,
        include_reason=change.get("reason"),
        use_cache=not change.get("no_cache"),
    )
    assert (result.cached == 1) is hit
    assert (judge.calls == []) is hit


def test_case_errors_are_recorded_and_the_run_goes_on(tmp_path: Path):
    class Overflowing(FakeJudge):
        def score(self, prompt, lo, hi):
            if "summary 1" in prompt.text():
                raise ContextOverflow(5000, 4096, prompt.case_id)
            return super().score(prompt, lo, hi)

    result = evaluate(cases(3), [metric()], model=Overflowing(scores=SCORES))
    errors = [line for line in result.lines if line.result.error]
    assert [e.case_id for e in errors] == ["c1"]
    assert "5000 tokens" in errors[0].result.error and errors[0].result.score is None
    assert len(result.lines) == 3 and not result.all_passed
    stopped = evaluate(
        cases(3), [metric()], model=Overflowing(scores=SCORES), fail_fast=True, use_cache=False
    )
    assert len(stopped.lines) == 2


def test_missing_fields_fail_before_any_judging():
    judge = FakeJudge(scores=SCORES)
    with pytest.raises(DataError, match="case 'x' has no 'input', which metric 'Coherence' needs"):
        evaluate([LLMTestCase(actual_output="a", id="x")], [metric()], model=judge)
    assert judge.calls == []


def test_cases_sharing_an_input_run_back_to_back():
    mixed = [
        LLMTestCase(input=doc, actual_output=f"s{i}", id=f"{doc}{i}")
        for i, doc in enumerate(["A", "B", "A", "B"])
    ]
    judge = FakeJudge(scores=SCORES)
    result = evaluate(mixed, [metric()], model=judge)
    assert [line.case_id for line in result.lines] == ["A0", "A2", "B1", "B3"]
    assert sorted(line.position for line in result.lines) == [0, 1, 2, 3]


def test_junit_is_well_formed_with_one_testcase_per_pair():
    judge = FakeJudge(scores=SCORES)
    result = evaluate(cases(2), [metric(), metric("Strict", threshold=0.9)], model=judge)
    root = ET.fromstring(junit_xml(result.lines))
    suite = root.find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and suite.get("errors") == "0"
    names = [(tc.get("classname"), tc.get("name")) for tc in suite.iter("testcase")]
    assert len(names) == 4 and ("Strict", "c1") in names
    failure = suite.find("testcase[@classname='Strict']/failure")
    assert failure.get("message") == "score 0.850 < threshold 0.9"


def test_assert_test_lists_each_failing_metric():
    judge = FakeJudge(scores=SCORES)
    assert_test(cases(1)[0], [metric()], model=judge)
    with pytest.raises(AssertionError) as info:
        assert_test(cases(1)[0], [metric(), metric("Strict", threshold=0.9)], model=judge)
    assert "Strict: score 0.850 < threshold 0.9" in str(info.value)
    assert "Coherence" not in str(info.value)


def test_big_groups_are_split_evenly_for_several_workers():
    from anvil_local.run.dataset import rows_from_cases
    from anvil_local.run.schedule import group_by_prefix, split_for_workers

    mixed = [
        LLMTestCase(input=d, actual_output=f"{d}{i}", id=f"{d}{i}")
        for d in "ABC"
        for i in range(16)
    ]
    rows = rows_from_cases(mixed)
    groups = group_by_prefix(rows)
    assert [len(g) for g in groups] == [16, 16, 16]
    chunks = split_for_workers(groups, 2)
    assert [len(c) for c in chunks] == [8] * 6
    assert all(len({r.case.input for r in c}) == 1 for c in chunks)  # a chunk never mixes inputs
    assert split_for_workers(groups, 1) == groups


def test_resume_reads_back_only_the_pairs_still_asked_for(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(4), [metric(), metric("Fluency")], model=FakeJudge(scores=SCORES), out=out)
    result = evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert result.resumed == 2
    assert {(x.case_id, x.metric) for x in result.lines} == {
        ("c0", "Coherence"),
        ("c1", "Coherence"),
    }


class FailsOnce(FakeJudge):
    """Errors on case c1 until `healed` is set."""

    healed = False

    def score(self, prompt, lo, hi):
        self.attempts = getattr(self, "attempts", 0) + 1
        if "summary 1" in prompt.text() and not FailsOnce.healed:
            raise ContextOverflow(5000, 4096, prompt.case_id)
        return super().score(prompt, lo, hi)


def test_an_error_pair_is_retried_and_the_file_keeps_one_line_per_pair(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    FailsOnce.healed = False
    for run in range(3):  # still failing: retried once per run, never a second line
        judge = FailsOnce(scores=SCORES)
        result = evaluate(cases(3), [metric()], model=judge, out=out, use_cache=False)
        pairs = [(x["case_id"], x["metric"]) for x in read(out)]
        assert len(pairs) == 3 == len(set(pairs))
        assert judge.attempts == (3 if run == 0 else 1)
    assert result.resumed == 2
    assert [x["case_id"] for x in read(out) if x["error"]] == ["c1"]
    FailsOnce.healed = True
    judge = FailsOnce(scores=SCORES)
    result = evaluate(cases(3), [metric()], model=judge, out=out, use_cache=False)
    assert result.resumed == 2 and judge.attempts == 1  # only the error pair ran again
    lines = read(out)
    assert len(lines) == 3 and all(x["error"] is None for x in lines)


def test_a_second_writer_on_the_same_results_file_is_refused(tmp_path: Path):
    from anvil_local.run.output import ResultWriter

    out = tmp_path / "r.jsonl"
    holder = ResultWriter(out)
    holder.lock()
    try:
        with pytest.raises(DataError, match="being written by another anvil eval"):
            evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    finally:
        holder.close()
    result = evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert len(result.lines) == 1  # free again once the first writer closed


def test_the_lock_is_released_when_a_run_fails_on_input(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    out.write_text("not results\n")
    for _ in range(2):  # the second attempt must see the same input error, not a lock
        with pytest.raises(DataError, match="not a result line"):
            evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)


def test_resumed_lines_are_not_counted_as_cache_hits(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=tmp_path / "first.jsonl")
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out)  # both from cache
    result = evaluate(cases(3), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert (result.resumed, result.cached) == (2, 0)
    assert len(result.lines) - result.resumed - result.cached == 1  # judged in this run
