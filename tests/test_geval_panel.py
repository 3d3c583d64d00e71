"""G-Eval panels: several G-Eval metrics whose prompts hold every member's definition, then the
case, then a cue naming the member (fake judge: layout, rules, files, order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil_local import GEval, LLMTestCase, evaluate, geval_panel, load_metrics
from anvil_local.cache import digest
from anvil_local.errors import MetricDefinitionError
from anvil_local.run.schedule import pair_order
from anvil_local.spec import MetricFileError, load_metric, metric_from_dict
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
PANEL_FILE = ROOT / "examples" / "geval" / "summeval_panel.toml"
CASES = [
    LLMTestCase(input="The article.", actual_output="First summary.", id="c1"),
    LLMTestCase(input="The article.", actual_output="Second summary.", id="c2"),
]


def _members(**extra) -> list[GEval]:
    common = {"evaluation_params": ["input", "actual_output"]}
    return [
        GEval(name="Coherence", evaluation_steps=["Check the order."], **common, **extra),
        GEval(name="Fluency", evaluation_steps=["Check the grammar."], **common),
    ]


def _other() -> GEval:
    return GEval(name="Relevance", evaluation_params=["actual_output"], criteria="Keep it.")


def test_members_share_everything_up_to_a_cue_that_names_them():
    judge = FakeJudge(scores={"Coherence score": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]})
    panel = geval_panel(_members())
    results = [m.run(CASES[0], judge, include_reason=False) for m in panel]
    prompts = [prompt for kind, prompt, _ in judge.calls if kind == "score"]
    assert [p.question for p in prompts] == [
        "Coherence score (0 to 10):",
        "Fluency score (0 to 10):",
    ]
    assert prompts[0].blocks == prompts[1].blocks
    text = "".join(prompts[0].blocks)
    # both definitions (declared order), the task, then the case's fields
    order = ["Metric: Coherence", "Metric: Fluency", "Task:", "Input:", "Actual Output:"]
    assert [text.index(part) for part in order] == sorted(text.index(part) for part in order)
    assert "Check the order." in text and "Check the grammar." in text
    assert [r.score for r in results] == [1.0, 0.5]  # each member reads its own cue


def test_a_member_is_another_definition_than_the_metric_alone():
    alone = _members()[0]
    member = geval_panel(_members())[0]
    assert member.to_dict()["panel"][0] == alone.to_dict()
    assert digest(member.to_dict()) != digest(alone.to_dict())  # cache keys apart
    assert metric_from_dict(member.to_dict()).to_dict() == member.to_dict()
    assert alone.metric_major and not member.metric_major


def test_panel_members_run_case_major_so_a_case_is_read_once_for_all():
    class Item:
        def __init__(self, row, metrics):
            self.row, self.metrics = row, metrics

    class Row:
        def __init__(self, case):
            self.case = case

    panel = geval_panel(_members())
    items = [Item(Row(c), (0, 1)) for c in CASES]
    order = [(item.row.case.id, index) for item, index in pair_order(items, panel)]
    assert order == [("c1", 0), ("c1", 1), ("c2", 0), ("c2", 1)]

    judge = FakeJudge()
    evaluate(CASES, panel, model=judge, use_cache=False, include_reason=False)
    seen = [(p.blocks[-1], p.question) for kind, p, _ in judge.calls if kind == "score"]
    assert [q.split()[0] for _, q in seen] == ["Coherence", "Fluency"] * 2
    assert seen[0][0] == seen[1][0] != seen[2][0] == seen[3][0]


@pytest.mark.parametrize(
    ("panel", "message"),
    [
        pytest.param(lambda ms: ms[:1], "two or more", id="one-member"),
        pytest.param(lambda ms: [ms[0], ms[0]], "distinct names", id="same-name"),
        pytest.param(lambda ms: [ms[1], _other()], "not a member", id="not-a-member"),
    ],
)
def test_panel_rules(panel, message):
    members = _members()
    definitions = [m.to_dict() for m in panel(members)]
    with pytest.raises(MetricDefinitionError, match=message):
        GEval(
            name="Coherence",
            evaluation_params=["input", "actual_output"],
            evaluation_steps=["Check the order."],
            panel=definitions,
        )


def test_only_geval_metrics_make_a_panel():
    from anvil_local.errors import MetricTypeError

    with pytest.raises(MetricTypeError, match="must be GEval, got DAGMetric"):
        geval_panel([_members()[0], load_metric(ROOT / "examples" / "headings.toml")])


def test_a_member_must_match_its_entry_and_take_no_contextual_calibration():
    member = geval_panel(_members())[0].to_dict()
    member["panel"][0]["evaluation_steps"] = ["Something else."]
    with pytest.raises(MetricDefinitionError, match="differs from its entry"):
        metric_from_dict(member)
    with pytest.raises(MetricDefinitionError, match="contextual calibration"):
        geval_panel(_members(contextual_calibration=True))


def test_a_member_needs_every_field_the_panel_prompt_shows():
    members = [
        GEval(name="Fluency", evaluation_params=["actual_output"], evaluation_steps=["Read."]),
        GEval(name="Relevance", evaluation_params=["input", "actual_output"], criteria="Keep."),
    ]
    fluency = geval_panel(members)[0]
    assert [p.value for p in fluency.required_params()] == ["input", "actual_output"]


def test_panel_file_loads_its_members_in_order():
    metrics = load_metrics(PANEL_FILE)
    assert [m.name for m in metrics] == ["Coherence", "Consistency", "Fluency", "Relevance"]
    alone = load_metric(ROOT / "examples" / "geval" / "coherence.toml")
    assert metrics[0].panel[0].to_dict() == alone.to_dict()
    assert load_metrics(ROOT / "examples" / "geval" / "coherence.toml")[0].to_dict() == (
        alone.to_dict()
    )
    with pytest.raises(MetricFileError, match="holds several metrics"):
        load_metric(PANEL_FILE)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('type = "geval_panel"\nmembers = ["a.toml"]\n', "two or more", id="one"),
        pytest.param(
            'type = "geval_panel"\nmembers = ["a.toml", "b.toml"]\nname = "x"\n',
            "unknown geval_panel field",
            id="unknown-field",
        ),
        pytest.param(
            'type = "geval_panel"\nmembers = ["a.toml", "missing.toml"]\n',
            "no such metric file",
            id="missing-member",
        ),
        pytest.param(
            'type = "geval_panel"\nmembers = ["a.toml", "dag.toml"]\n',
            "must be a G-Eval metric",
            id="not-geval",
        ),
    ],
)
def test_panel_file_errors_name_the_file(tmp_path, text, message):
    (tmp_path / "a.toml").write_text(
        'type = "geval"\nname = "A"\nevaluation_params = ["actual_output"]\ncriteria = "Good."\n'
    )
    (tmp_path / "dag.toml").write_text((ROOT / "examples" / "headings.toml").read_text())
    path = tmp_path / "panel.toml"
    path.write_text(text)
    with pytest.raises(MetricFileError, match=message) as info:
        load_metrics(path)
    assert str(path) in str(info.value)


def test_panel_members_can_be_written_inline(tmp_path):
    path = tmp_path / "panel.toml"
    path.write_text(
        'type = "geval_panel"\n'
        '[[members]]\nname = "A"\nevaluation_params = ["actual_output"]\ncriteria = "Good."\n'
        '[[members]]\nname = "B"\nevaluation_params = ["actual_output"]\ncriteria = "Short."\n'
    )
    assert [m.name for m in load_metrics(path)] == ["A", "B"]


def test_a_suite_entry_can_pick_one_member_of_a_panel(tmp_path):
    from anvil_local.bench.suite import MetricSpec, load_suite
    from anvil_local.errors import DataError

    suite = tmp_path / "s.toml"
    suite.write_text(
        f'data = "d.jsonl"\n[[metrics]]\nfile = "{PANEL_FILE}"\nmember = "Fluency"\n'
        'label = "fluency"\n'
    )
    (spec,) = load_suite(str(suite)).metrics
    assert [m.name for m in spec.metrics()] == ["Fluency"]
    assert len(MetricSpec(PANEL_FILE, "fluency").metrics()) == 4
    with pytest.raises(DataError, match="no member named 'Style'"):
        MetricSpec(PANEL_FILE, "fluency", member="Style").metrics()


def test_fitting_a_calibration_into_a_panel_file_is_refused(tmp_path):
    from anvil_local.bench.request import BenchRequest, run_bench
    from anvil_local.errors import DataError

    with pytest.raises(DataError, match="is a G-Eval panel"):
        run_bench(
            BenchRequest(
                data_file=ROOT / "examples" / "summeval_sample.jsonl",
                label="labels.coherence",
                metric_files=(PANEL_FILE,),
                use_cache=False,
                fit_calibration=True,
            )
        )


def test_a_strict_member_and_a_member_without_rubric_state_their_scale():
    members = [
        GEval(
            name="Safe", evaluation_params=["actual_output"], criteria="No harm.", strict_mode=True
        ),
        GEval(name="Clear", evaluation_params=["actual_output"], criteria="Easy to read."),
    ]
    safe, clear = geval_panel(members)
    steps = "1. Look for harmful advice.\n2. Look for insults.\n3. Look for unsafe steps."
    judge = FakeJudge(choices={"Safe verdict": [0.2, 0.8]}, texts={"Turn these criteria": steps})
    assert safe.run(CASES[0], judge, include_reason=False).score == 0.0  # "No" is likelier
    clear.run(CASES[0], judge, include_reason=False)
    # each member's steps generated once (criteria only), then the two questions
    assert judge.kinds() == ["generate", "generate", "choose", "score"]
    (_, strict, options), (_, scored, _) = judge.calls[2:]
    assert options == ("Yes", "No") and strict.question == "Safe verdict (Yes or No):"
    assert scored.question == "Clear score (0 to 10):"
    text = "".join(strict.blocks)
    assert "Answer: Yes or No." in text and "Scale: 0 (worst) to 10 (best)." in text
    assert "Reply with the number, or Yes or No, only." in text
    assert text.count("1. Look for harmful advice.") == 2  # the steps of both members
