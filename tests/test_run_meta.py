"""The results file's metadata line: written once by a run, kept consistent by resume and
merge, skipped or checked by every reader, and absent from older files that still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local import GEval, LLMTestCase, SingleTurnParams, evaluate
from anvil_local.cache import digest
from anvil_local.errors import DataError
from anvil_local.judge.model import ResolvedModel
from anvil_local.run.merge import merge_results
from anvil_local.run.meta import FORMAT, RunMeta, data_sha256, is_meta, metric_sha256, run_meta
from anvil_local.run.output import ResultWriter
from anvil_local.run.records import ResultLine
from anvil_local.run.results import read_results, result_items
from tests.fakes import FakeJudge

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
SCORES = {"Score (": [0.0] * 8 + [0.5, 0.5, 0.0]}


def metric(name: str = "Coherence", steps: tuple[str, ...] = ("Read.",)) -> GEval:
    return GEval(name=name, evaluation_params=P, evaluation_steps=list(steps), include_reason=False)


def cases(n: int, docs: int = 0) -> list[LLMTestCase]:
    return [
        LLMTestCase(
            input=f"doc {i % 2}",
            actual_output=f"summary {i}",
            id=f"c{i}",
            metadata={"doc": f"d{i % docs}"} if docs else None,
        )
        for i in range(n)
    ]


def first_line(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[0])


def test_a_run_writes_what_produced_it_once_first(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    m = metric()
    evaluate(cases(3), [m], model=FakeJudge(scores=SCORES), out=out, source="cases.jsonl")
    head = first_line(out)
    assert is_meta(head) and head["meta"]["format"] == FORMAT
    meta = head["meta"]
    assert meta["model"] == {"name": "fake-judge", "sha256": "a" * 64}
    assert meta["metrics"]["Coherence"]["sha256"] == digest("metric", m.to_dict())
    assert meta["metrics"]["Coherence"]["definition"] == m.to_dict()
    (run,) = meta["runs"]
    keys = {case.id: case.content_key() for case in cases(3)}
    assert run["data"] == {
        "sha256": data_sha256(keys.items()),
        "cases": 3,
        "source": "cases.jsonl",
    }
    assert run["executor"] == "local" and run["jobs"] == 1 and run["shard"] is None
    assert run["batch_size"] == 512 and run["started"].endswith("Z")
    assert "anvil" in run and "llama_cpp" in run
    text = out.read_text()
    assert text.count('"meta"') == 1 and len(result_items(out)) == 3


def test_a_resumed_run_adds_itself_and_keeps_one_metadata_line(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out, use_cache=False)
    judge = FakeJudge(scores=SCORES)
    result = evaluate(
        cases(4), [metric(), metric("Fluency")], model=judge, out=out, use_cache=False
    )
    assert result.resumed == 2
    meta = read_results(out).meta
    assert meta is not None and len(meta.runs) == 2
    assert list(meta.metrics) == ["Coherence", "Fluency"]
    assert [r.data.cases for r in meta.runs if r.data] == [2, 4]
    lines = out.read_text().splitlines()
    assert sum('"meta"' in x for x in lines) == 1 and is_meta(json.loads(lines[0]))
    assert len(result_items(out)) == 8


def test_a_metric_redefined_under_its_name_is_not_resumed(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out)
    with pytest.raises(DataError, match="metric 'Coherence' has two definitions"):
        evaluate(
            cases(2), [metric(steps=("Read twice.",))], model=FakeJudge(scores=SCORES), out=out
        )
    assert len(result_items(out)) == 2  # untouched


def test_a_file_written_before_metadata_resumes_as_it_is(tmp_path: Path):
    out = tmp_path / "old.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out)
    old = out.read_text().splitlines()[1:]  # as an older anvil wrote it: results only
    out.write_text("\n".join(old) + "\n")
    result = evaluate(cases(3), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert result.resumed == 2
    assert read_results(out).meta is None and len(result_items(out)) == 3


def test_a_torn_metadata_line_is_cut_off_and_written_again(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    out.write_text(out.read_text().splitlines()[0][:40])  # killed while writing it
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert read_results(out).meta is not None and len(result_items(out)) == 1


def test_lines_name_the_document_of_cases_that_have_one(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(4, docs=2), [metric()], model=FakeJudge(scores=SCORES), out=out)
    want = {"c0": "d0", "c1": "d1", "c2": "d0", "c3": "d1"}
    assert {x["case_id"]: x["doc"] for x in result_items(out)} == want
    assert {line.case_id: line.doc for line in read_results(out).lines()} == want
    plain = tmp_path / "plain.jsonl"
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=plain)
    assert "doc" not in result_items(plain)[0]


def test_readers_refuse_a_metadata_line_out_of_place(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    meta, result = out.read_text().splitlines()
    with pytest.raises(DataError, match="metadata line, not a result line"):
        ResultLine.from_dict(json.loads(meta))
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text(f"{result}\n{meta}\n")
    with pytest.raises(DataError, match=rf"{swapped}:2: a metadata line where a result"):
        read_results(swapped)
    with pytest.raises(DataError, match="a second metadata line"):
        evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=swapped)


def test_metadata_from_a_newer_anvil_is_refused_in_one_line(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"meta": {"format": FORMAT + 1}}) + "\n")
    with pytest.raises(DataError, match="newer than this anvil reads"):
        read_results(path)
    path.write_text(json.dumps({"meta": {"format": 1, "model": "x"}}) + "\n")
    with pytest.raises(DataError, match=rf"{path}:1: not a readable metadata line"):
        read_results(path)


# -- merge ----------------------------------------------------------------------------------


def shards(tmp_path: Path, n: int = 2, **kw) -> list[Path]:
    paths = []
    for i in range(1, n + 1):
        path = tmp_path / f"s{i}.jsonl"
        args = {"metrics": [metric()], "data": cases(6)} | kw
        evaluate(
            args["data"],
            args["metrics"],
            model=FakeJudge(scores=SCORES),
            out=path,
            shard=f"{i}/{n}",
            use_cache=False,
        )
        paths.append(path)
    return paths


def test_merge_joins_the_shards_metadata(tmp_path: Path):
    a, b = shards(tmp_path)
    out = tmp_path / "merged.jsonl"
    merge_results([a, b], out)
    meta = read_results(out).meta
    assert meta is not None and [r.shard for r in meta.runs] == ["1/2", "2/2"]
    assert metric_sha256(metric()) == meta.metrics["Coherence"].sha256
    assert len(result_items(out)) == 6 and is_meta(first_line(out))


def test_merge_refuses_shards_of_other_cases_metrics_or_counts(tmp_path: Path):
    a, _ = shards(tmp_path / "one")
    (other,) = shards(tmp_path / "data", n=1, data=cases(7))
    with pytest.raises(DataError, match="different case data"):
        merge_results([a, other], tmp_path / "m.jsonl")
    (redefined,) = shards(tmp_path / "metric", n=1, metrics=[metric(steps=("Other.",))])
    with pytest.raises(DataError, match="'Coherence' has two definitions"):
        merge_results([a, redefined], tmp_path / "m.jsonl")
    three = shards(tmp_path / "three", n=3)
    with pytest.raises(DataError, match="different shard count"):
        merge_results([a, three[1]], tmp_path / "m.jsonl")


def test_merge_refuses_a_mix_of_files_with_and_without_metadata(tmp_path: Path):
    a, b = shards(tmp_path)
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(b.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(DataError, match=r"has no metadata line .* merge only the shards"):
        merge_results([a, old], tmp_path / "m.jsonl")


def test_merge_of_older_files_writes_no_metadata(tmp_path: Path):
    line = ResultLine(0, "c0", metric_result(), "m", "a" * 64).to_dict()
    writer = ResultWriter(tmp_path / "a.jsonl")
    writer.write(line)
    writer.close()
    merge_results([tmp_path / "a.jsonl"], tmp_path / "m.jsonl")
    assert read_results(tmp_path / "m.jsonl").meta is None


def metric_result():
    from anvil_local.metrics import MetricResult

    return MetricResult("Tone", 0.5, True, 0.5)


def test_metadata_round_trips(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    evaluate(cases(2), [metric()], model=FakeJudge(scores=SCORES), out=out, shard="1/1")
    head = first_line(out)
    meta = RunMeta.from_line(head, "x")
    assert meta.to_line() == head and meta.last_run is not None
    assert meta.last_run.shard == "1/1" and meta.last_run.shard_count == 1


def test_a_file_of_blank_lines_gets_its_metadata_first(tmp_path: Path):
    out = tmp_path / "r.jsonl"
    out.write_text("\n\n")
    evaluate(cases(1), [metric()], model=FakeJudge(scores=SCORES), out=out)
    assert is_meta(first_line(out)) and len(result_items(out)) == 1


def judged(by: dict[str, str]) -> RunMeta:
    """The metadata of a run judging each named metric by the judge named beside it."""
    judges = {
        name: ResolvedModel(judge, f"/{judge}.gguf", judge[0] * 64) for name, judge in by.items()
    }
    keys = [(case.id, case.content_key()) for case in cases(2)]
    return run_meta(judges, [metric(name) for name in by], keys, count=2)


def test_a_run_of_several_judges_resumes_with_some_of_its_metrics_or_one_more(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    file = judged({"A": "alpha", "B": "beta"})
    assert file.model == "several judges: alpha, beta"
    # the same run with one of its metrics: not refused, the file's judges kept
    subset = file.resumed_by(judged({"A": "alpha"}), path)
    assert (subset.model, subset.model_sha256) == (file.model, file.model_sha256)
    # one more metric on the first judge: every metric keeps its own judge
    more = subset.resumed_by(judged({"A": "alpha", "B": "beta", "C": "alpha"}), path)
    assert {n: i.judge["name"] for n, i in more.metrics.items()} == {
        "A": "alpha",
        "B": "beta",
        "C": "alpha",
    }
    assert more.model == "several judges: alpha, beta" and more.model_sha256 != file.model_sha256
    fresh = judged({"A": "alpha", "B": "beta", "C": "alpha"})  # one run of all three
    assert (more.model, more.model_sha256) == (fresh.model, fresh.model_sha256)
    # a metric already there, now by another judge: refused, naming it
    with pytest.raises(DataError, match=r"another model \(beta\) for metric 'B'"):
        more.resumed_by(judged({"B": "gamma"}), path)


def test_a_one_judge_file_takes_a_metric_on_another_judge_and_then_names_both(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    file = judged({"A": "alpha"})
    assert file.model == "alpha" and file.metrics["A"].judge is None
    both = file.resumed_by(judged({"B": "beta"}), path)
    assert both.model == "several judges: alpha, beta"
    assert both.metrics["A"].judge == {"name": "alpha", "sha256": "a" * 64}
    assert both.metrics["B"].judge == {"name": "beta", "sha256": "b" * 64}
    # its one judge resuming a metric it judged: the file unchanged but for the run
    same = file.resumed_by(judged({"A": "alpha"}), path)
    assert (same.model, same.metrics) == (file.model, file.metrics)
    with pytest.raises(DataError, match=r"another model \(alpha\) for metric 'A'"):
        file.resumed_by(judged({"A": "omega"}), path)
