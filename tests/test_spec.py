"""Metric files: TOML/JSON round trips, errors that name the file and node, DeepEval import."""

import json
from pathlib import Path

import pytest

from anvil_local import DAGMetric, GEval
from anvil_local.spec import MetricFileError, dump_metric, load_metric

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ROOT / "examples" / "headings.toml"

DEEPEVAL_DAG = {
    "nodes": {
        "id0": {
            "type": "TaskNode",
            "instructions": "Extract headings",
            "output_label": "Headings",
            "label": "extract",
            "evaluation_params": ["actual_output"],
            "children": ["id1"],
        },
        "id1": {
            "type": "BinaryJudgementNode",
            "criteria": "Are all three headings present?",
            "label": None,
            "evaluation_params": None,
            "children": ["id2", "id3"],
        },
        "id2": {"type": "VerdictNode", "verdict": False, "score": 0},
        "id3": {"type": "VerdictNode", "verdict": True, "child": {"type": "node", "ref": "id4"}},
        "id4": {
            "type": "NonBinaryJudgementNode",
            "criteria": "Are the headings in order?",
            "label": None,
            "evaluation_params": None,
            "children": ["id5", "id6", "id7"],
        },
        "id5": {"type": "VerdictNode", "verdict": "All in order", "score": 10},
        "id6": {
            "type": "VerdictNode",
            "verdict": "Two out of order",
            "child": {
                "type": "geval",
                "name": "Order",
                "evaluation_params": ["actual_output"],
                "criteria": "judge order",
                "evaluation_steps": None,
                "rubric": None,
                "threshold": 0.5,
                "top_logprobs": 20,
                "async_mode": True,
                "strict_mode": False,
                "verbose_mode": False,
            },
        },
        "id7": {"type": "VerdictNode", "verdict": "All out of order", "score": 2},
    }
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_example_file_loads_and_round_trips_through_json(tmp_path: Path):
    metric = load_metric(HEADINGS)
    assert isinstance(metric, DAGMetric)
    assert [metric.dag.node_id(n) for n in metric.dag.order if hasattr(n, "criteria")] == [
        "headings",
        "order",
    ]
    out = tmp_path / "copy.json"
    dump_metric(metric, out)
    again = load_metric(out)
    assert again.to_dict() == metric.to_dict()
    assert DAGMetric.from_dict(metric.to_dict()).to_dict() == metric.to_dict()


def test_geval_file_round_trip(tmp_path: Path):
    path = write(
        tmp_path,
        "g.toml",
        """
type = "geval"
name = "Coherence"
evaluation_params = ["input", "actual_output"]
criteria = "Is the summary coherent?"
threshold = 0.6
rubric = [
  { score_range = [0, 4], expected_outcome = "incoherent" },
  { score_range = [5, 10], expected_outcome = "coherent" },
]
""",
    )
    metric = load_metric(path)
    assert isinstance(metric, GEval) and metric.score_range == (0, 10)
    assert GEval.from_dict(metric.to_dict()).to_dict() == metric.to_dict()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            '[nodes.a]\ntype = "binary"\ncriteria = "Q?"\nevaluation_params = ["actual_output"]\n'
            "verdicts = [{ verdict = true, score = 1 }]",
            "node 'a': BinaryJudgementNode must have exactly 2 children.",
            id="binary-count",
        ),
        pytest.param(
            '[nodes.a]\ntype = "task"\ninstructions = "x"\noutput_label = "y"\n'
            'evaluation_params = ["actual_output"]\nchildren = ["zzz"]',
            "node 'a': 'children' names unknown node 'zzz'",
            id="unknown-child",
        ),
        pytest.param(
            '[nodes.a]\ntype = "non_binary"\ncriteria = "Q?"\nevaluation_params = ["actual_output"]\n'
            'verdicts = [{ verdict = "X", score = 12 }]',
            "node 'a': The score must be between 0 and 10",
            id="score-range",
        ),
        pytest.param(
            '[nodes.a]\ntype = "non_binary"\ncriteria = "Q?"\nevaluation_params = ["actual_output"]\n'
            'verdicts = [{ verdict = "X", then = "b" }]\n[nodes.b]\ntype = "non_binary"\n'
            'criteria = "R?"\nverdicts = [{ verdict = "Y", then = "a" }]',
            "Cycle detected in DAG graph",
            id="cycle",
        ),
        pytest.param(
            '[nodes.a]\ntype = "decision"', "node 'a': unknown type 'decision'", id="type"
        ),
        pytest.param(
            'roots = ["a"]\n[nodes.a]\ntype = "binary"\ncriteria = "Q?"\nevaluation_params = ["actual_output"]\n'
            "verdicts = [{ verdict = true, score = 1 }, { verdict = false, score = 0 }]\n"
            '[nodes.b]\ntype = "binary"\ncriteria = "R?"\n'
            "verdicts = [{ verdict = true, score = 1 }, { verdict = false, score = 0 }]",
            "node 'b': is not reachable from any root",
            id="unreachable",
        ),
        pytest.param(
            '[nodes.a]\ntype = "binary"\ncriteria = "Q?"\nevaluation_params = ["output"]\n'
            "verdicts = [{ verdict = true, score = 1 }, { verdict = false, score = 0 }]",
            "node 'a': unknown evaluation param 'output'",
            id="param",
        ),
    ],
)
def test_file_errors_name_the_file_and_node(tmp_path: Path, body: str, message: str):
    path = write(tmp_path, "bad.toml", f'type = "dag"\nname = "Bad"\n{body}\n')
    with pytest.raises(MetricFileError) as info:
        load_metric(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_unreadable_files_are_clear_errors(tmp_path: Path):
    with pytest.raises(MetricFileError, match="no such metric file"):
        load_metric(tmp_path / "missing.toml")
    with pytest.raises(MetricFileError, match="invalid TOML"):
        load_metric(write(tmp_path, "x.toml", "type = "))
    with pytest.raises(MetricFileError, match=r"\.toml or \.json"):
        load_metric(write(tmp_path, "x.yaml", "a: 1"))


def test_deepeval_dag_json_imports_into_the_same_objects(tmp_path: Path):
    path = write(tmp_path, "deepeval.json", json.dumps(DEEPEVAL_DAG))
    metric = load_metric(path)
    assert isinstance(metric, DAGMetric) and metric.name == "deepeval"
    data = metric.to_dict()
    assert list(data["nodes"]) == ["extract", "binary-1", "non_binary-1", "order"]
    order = data["nodes"]["non_binary-1"]["verdicts"]
    assert [v["verdict"] for v in order] == ["All in order", "Two out of order", "All out of order"]
    assert order[1] == {"verdict": "Two out of order", "then": "order"}
    assert data["nodes"]["order"]["criteria"] == "judge order"
    wrapped = write(
        tmp_path,
        "upload.json",
        json.dumps(
            {"name": "Headings", "algorithm": "DAG", "multiTurn": False, "dag": DEEPEVAL_DAG}
        ),
    )
    assert load_metric(wrapped).name == "Headings"


def test_deepeval_metric_children_other_than_geval_are_refused(tmp_path: Path):
    doc = json.loads(json.dumps(DEEPEVAL_DAG))
    doc["nodes"]["id6"]["child"] = {
        "type": "metric",
        "metric_class": "AnswerRelevancyMetric",
        "kwargs": {},
    }
    with pytest.raises(MetricFileError, match="type 'metric' is not supported"):
        load_metric(write(tmp_path, "d.json", json.dumps(doc)))
