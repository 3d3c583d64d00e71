"""The runner's stages and extension points on a scripted judge: the registry (built-in,
registered and entry-point kinds), metrics on the wire, shards + merge, sinks, and the
typed traces."""

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from click.testing import CliRunner

from anvil_local import DAGMetric, GEval, LLMTestCase, SingleTurnParams, evaluate, registry
from anvil_local.cli import main
from anvil_local.errors import DataError
from anvil_local.metrics.dag import BinaryJudgementNode, DeepAcyclicGraph, VerdictNode
from anvil_local.metrics.dag.trace import ChoiceStep, DagTrace
from anvil_local.metrics.definitions import metric_from_dict, metric_from_wire, metric_to_wire
from anvil_local.run.dataset import rows_from_cases
from anvil_local.run.merge import merge_results
from anvil_local.run.plan import Shard
from anvil_local.run.results import result_items
from anvil_local.run.sinks import BaseSink
from anvil_local.spec import load_metric
from tests.fakes import FakeJudge
from tests.plugin_metric import KeywordMetric

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
SCORES = {"Score (": [0.0] * 8 + [0.5, 0.5, 0.0]}


def geval(name: str = "Coherence") -> GEval:
    return GEval(name, P, evaluation_steps=["Read."], include_reason=False)


def gate(name: str = "Gate") -> DAGMetric:
    node = BinaryJudgementNode(
        "Is it on topic?",
        [VerdictNode(True, score=10), VerdictNode(False, score=0)],
        evaluation_params=["actual_output"],
    )
    return DAGMetric(name, DeepAcyclicGraph([node]), include_reason=False)


def cases() -> list[LLMTestCase]:
    """Eight cases over four documents: four prefix groups of two."""
    return [
        LLMTestCase(input=f"doc {i // 2}", actual_output=f"summary {i}", id=f"c{i}")
        for i in range(8)
    ]


def read(path: Path) -> list[dict]:
    return result_items(path)  # the result lines, without the metadata line


def without_timing(line: dict) -> dict:
    return {k: v for k, v in line.items() if k != "seconds"}


# -- registry ---------------------------------------------------------------------------


def test_built_in_and_imported_kinds_are_registered():
    kinds = registry.METRIC_KINDS.entries()
    assert {"geval", "dag"} <= set(kinds) and kinds["keyword"] is KeywordMetric
    assert list(registry.NODE_KINDS)[:3] == ["task", "binary", "non_binary"]


def test_a_registered_kind_loads_from_a_metric_file(tmp_path: Path):
    path = tmp_path / "kw.toml"
    path.write_text('type = "keyword"\nname = "Mentions"\nkeywords = ["budget", "dates"]\n')
    metric = load_metric(path)
    assert isinstance(metric, KeywordMetric) and metric.keywords == ["budget", "dates"]


def test_an_unknown_type_names_every_registered_kind():
    with pytest.raises(DataError, match=r"unknown metric type 'nope' \(expected one of: .*dag"):
        metric_from_dict({"type": "nope", "name": "x"})


def test_entry_points_register_third_party_kinds(monkeypatch: pytest.MonkeyPatch):
    calls = []
    entry = EntryPoint("kw", "tests.plugin_metric", registry.ENTRY_POINT_GROUP)
    hook = EntryPoint("hook", "tests.test_pipeline:_plugin_hook", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.METRIC_KINDS, "_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [entry, hook])
    monkeypatch.setattr("tests.test_pipeline._HOOK_CALLS", calls)
    assert "keyword" in registry.METRIC_KINDS
    assert calls == ["called"]


_HOOK_CALLS: list[str] = []


def _plugin_hook() -> None:
    _HOOK_CALLS.append("called")


def test_a_broken_plugin_is_a_warning_not_a_failure(monkeypatch, caplog):
    broken = EntryPoint("bad", "no_such_module_xyz", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.METRIC_KINDS, "_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    assert "geval" in registry.METRIC_KINDS
    assert "plugin bad (anvil_local.metrics) could not be loaded" in caplog.text


def test_metrics_travel_to_workers_as_data_and_come_back_equal():
    for metric in (geval(), gate(), KeywordMetric("Mentions", ["budget"])):
        wire = json.loads(json.dumps(metric_to_wire(metric)))  # plain data only
        back = metric_from_wire(wire)
        assert type(back) is type(metric) and back.to_dict() == metric.to_dict()


def test_an_unregistered_subclass_is_refused_before_any_worker_starts():
    class Tweaked(GEval):
        pass

    with pytest.raises(DataError, match="not a registered kind"):
        metric_to_wire(Tweaked("T", P, evaluation_steps=["Read."]))


def test_a_dag_metric_under_a_verdict_round_trips():
    inner = gate("Inner")
    node = BinaryJudgementNode(
        "Is there an output?",
        [VerdictNode(True, child=inner), VerdictNode(False, score=0)],
        evaluation_params=["actual_output"],
    )
    outer = DAGMetric("Outer", DeepAcyclicGraph([node]), include_reason=False)
    data = outer.to_dict()
    assert data["nodes"]["inner"]["type"] == "dag"
    back = metric_from_dict(json.loads(json.dumps(data)))
    assert back.to_dict() == data
    judge = FakeJudge(choices={"Is there an output?": [0.9, 0.1], "on topic": [0.2, 0.8]})
    assert back.measure(LLMTestCase(actual_output="x"), judge) == 0.0


# -- a registered metric through the runner --------------------------------------------


def test_a_registered_metric_runs_in_the_runner_like_a_built_in(tmp_path: Path):
    judge = FakeJudge(choices={"mention budget": [0.9, 0.1], "mention dates": [0.3, 0.7]})
    out = tmp_path / "r.jsonl"
    outcome = evaluate(
        cases()[:2], [KeywordMetric("Mentions", ["budget", "dates"])], model=judge, out=out
    )
    assert [line.result.score for line in outcome.lines] == pytest.approx([0.6, 0.6])
    assert read(out)[0]["trace"] == {"type": "keyword", "p_yes": {"budget": 0.9, "dates": 0.3}}


# -- shards and merge -------------------------------------------------------------------


def test_shards_partition_the_cases_without_splitting_a_prefix_group():
    rows = rows_from_cases(cases())
    owner = {r.case_id: [i for i in (1, 2, 3) if Shard(i, 3).owns(r)] for r in rows}
    assert all(len(shards) == 1 for shards in owner.values())  # each case in exactly one
    by_doc: dict[str, set[int]] = {}
    for r in rows:
        by_doc.setdefault(r.case.input, set()).update(owner[r.case_id])
    assert all(len(shards) == 1 for shards in by_doc.values())  # a group stays whole
    assert len({s for shards in by_doc.values() for s in shards}) > 1  # and work is shared


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "a/b", "1-3"])
def test_a_bad_shard_is_refused(text: str):
    with pytest.raises(DataError, match="shard"):
        Shard.parse(text)


def test_shards_merged_equal_the_unsharded_run(tmp_path: Path):
    metrics = [geval(), gate()]
    judge = FakeJudge(scores=SCORES, choices={"on topic": [0.7, 0.3]})
    whole = tmp_path / "whole.jsonl"
    evaluate(cases(), metrics, model=judge, out=whole, use_cache=False)
    parts = []
    for i in (1, 2, 3):
        part = tmp_path / f"shard{i}.jsonl"
        evaluate(cases(), metrics, model=judge, out=part, use_cache=False, shard=f"{i}/3")
        parts.append(part)
    assert sum(len(read(p)) for p in parts) == 16
    merged = tmp_path / "merged.jsonl"
    report = merge_results(parts, merged, [(c.id, m.name) for c in cases() for m in metrics])
    assert report.missing == [] and report.lines == 16
    order = {"Coherence": 0, "Gate": 1}
    expected = sorted(read(whole), key=lambda x: (x["position"], order[x["metric"]]))
    assert [without_timing(x) for x in read(merged)] == [without_timing(x) for x in expected]


def test_anvil_merge_reports_missing_pairs_and_fails(tmp_path: Path):
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases()))
    metric_file = tmp_path / "gate.json"
    metric_file.write_text(json.dumps(gate().to_dict()))
    part = tmp_path / "shard1.jsonl"
    evaluate(cases(), [gate()], model=FakeJudge(), out=part, use_cache=False, shard="1/3")
    merged = tmp_path / "merged.jsonl"
    args = ["merge", str(part), "--out", str(merged)]
    result = CliRunner().invoke(main, [*args, "--data", str(data), "--metric", str(metric_file)])
    missing = 8 - len(read(part))
    assert result.exit_code == 1, result.output
    assert result.output.count("missing: case") == missing and len(read(merged)) == 8 - missing
    whole = CliRunner().invoke(main, ["merge", str(part), "--out", str(merged)])
    assert whole.exit_code == 0, whole.output  # without --data, only the pairs seen count


# -- sinks ------------------------------------------------------------------------------


class Recorder(BaseSink):
    def __init__(self) -> None:
        self.events: list = []

    def start(self, plan) -> None:
        self.events.append(("start", plan.total))

    def accept(self, item) -> None:
        self.events.append(("line", item.row.case_id, item.metric.name, item.line.cached))

    def finish(self, outcome) -> None:
        self.events.append(("finish", len(outcome.lines)))


def test_a_sink_sees_the_plan_every_line_and_the_outcome():
    sink = Recorder()
    evaluate(cases()[:2], [geval()], model=FakeJudge(scores=SCORES), sinks=[sink])
    again = Recorder()
    evaluate(cases()[:3], [geval()], model=FakeJudge(scores=SCORES), sinks=[again])
    assert sink.events == [
        ("start", 2),
        ("line", "c0", "Coherence", False),
        ("line", "c1", "Coherence", False),
        ("finish", 2),
    ]
    assert again.events[0] == ("start", 3) and again.events[-1] == ("finish", 3)
    assert [e[3] for e in again.events[1:-1]] == [True, True, False]  # cached first


def test_a_failed_run_reports_nothing_but_releases_the_results_file(tmp_path: Path):
    sink = Recorder()
    out = tmp_path / "r.jsonl"
    with pytest.raises(DataError):
        evaluate(cases(), [geval(), geval()], model=FakeJudge(), out=out, sinks=[sink])
    assert sink.events == []
    evaluate(cases()[:1], [geval()], model=FakeJudge(scores=SCORES), out=out)  # not locked
    assert len(read(out)) == 1


# -- typed traces -----------------------------------------------------------------------


def test_a_dag_trace_is_typed_until_written():
    metric = gate()
    metric.measure(LLMTestCase(actual_output="x"), FakeJudge(choices={"on topic": [0.7, 0.3]}))
    trace = metric.trace
    assert isinstance(trace, DagTrace) and isinstance(trace.path[0], ChoiceStep)
    assert trace.path[0].headline == "Is it on topic?" and trace.path[0].verdict == "Yes"
    written = trace.to_dict()
    assert written["path"][0]["type"] == "binary" and written["leaves"][0]["score"] == 1.0
    assert "  - [binary-1] Is it on topic? -> Yes" in trace.lines()


# -- anvil export ---------------------------------------------------------------------


def test_anvil_export_to_deepeval_and_back_keeps_the_graph(tmp_path: Path):
    source = Path(__file__).resolve().parent.parent / "examples" / "headings_llm.toml"
    out = tmp_path / "headings.json"
    result = CliRunner().invoke(
        main, ["export", str(source), "--to", "deepeval", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    exported = json.loads(out.read_text())
    assert {spec["type"] for spec in exported["nodes"].values()} == {
        "TaskNode",
        "BinaryJudgementNode",
        "NonBinaryJudgementNode",
        "VerdictNode",
    }
    original, back = load_metric(source).to_dict(), load_metric(out).to_dict()
    for spec in original["nodes"].values():  # DeepEval's TaskNode has no budget or stop
        spec.pop("max_tokens", None), spec.pop("stop", None)
    assert back["nodes"] == original["nodes"] and back["roots"] == original["roots"]


def test_anvil_export_refuses_a_geval_for_deepeval_dag_json(tmp_path: Path):
    source = Path(__file__).resolve().parent.parent / "examples" / "geval" / "coherence.toml"
    result = CliRunner().invoke(main, ["export", str(source), "--to", "deepeval"])
    assert result.exit_code == 2 and result.output.startswith("Error: only a DAG metric")
    plain = CliRunner().invoke(main, ["export", str(source)])
    assert plain.exit_code == 0 and json.loads(plain.output) == load_metric(source).to_dict()
