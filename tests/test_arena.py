"""Arena G-Eval: orders and their arithmetic (hand-computed), the metric on a fake judge that
leans to a position, and the pairwise bench (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local import ArenaGEval, ArenaTestCase, Contestant, LLMTestCase, evaluate, load_metric
from anvil_local.errors import DataError, MetricDefinitionError
from anvil_local.judge.prompt import HEADER
from anvil_local.judge.results import ChoiceResult, Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.arena import combine, orders
from anvil_local.run.dataset import read_cases
from anvil_local.spec import metric_from_dict
from tests.fakes import FakeJudge

ROOT = Path(__file__).resolve().parent.parent
ARENA = ROOT / "examples" / "arena"


def arena(*outputs: str, names: str = "xyz", **fields) -> ArenaTestCase:
    return ArenaTestCase(
        contestants=[
            Contestant(names[i], LLMTestCase(input="The article.", actual_output=o))
            for i, o in enumerate(outputs)
        ],
        **fields,
    )


def metric(debias: bool = True, name: str = "Better") -> ArenaGEval:
    return ArenaGEval(
        name=name,
        evaluation_params=["input", "actual_output"],
        criteria="The better summary.",
        evaluation_steps=["Read the input.", "Compare the summaries."],
        debias=debias,
        include_reason=False,
    )


class PositionJudge(FakeJudge):
    """Gives `lean` to the first position, plus `edge` to the contestant whose output holds
    "good", wherever it is shown."""

    def __init__(self, lean: float, edge: float = 0.0) -> None:
        super().__init__()
        self.lean, self.edge = lean, edge

    def choose(self, prompt, options):
        shown = prompt.blocks[-len(options) :]
        weights = [1.0 + (self.lean if i == 0 else 0.0) for i in range(len(options))]
        weights = [
            w + (self.edge if "good" in b else 0.0) for w, b in zip(weights, shown, strict=True)
        ]
        total = sum(weights)
        probs = tuple(w / total for w in weights)
        best = max(range(len(probs)), key=lambda i: (probs[i], -i))
        self.calls.append(("choose", prompt, tuple(options)))
        return ChoiceResult(tuple(options), probs, best, Usage(10, 5, 5, 1), 0.001)


# -- orders ------------------------------------------------------------------------------


def test_orders_are_both_for_two_and_rotations_for_more():
    assert orders(2) == [(0, 1), (1, 0)]
    assert orders(3) == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert orders(3, debias=False) == [(0, 1, 2)]
    # every contestant in every position exactly once
    for count in (2, 3, 5):
        shown = orders(count)
        for position in range(count):
            assert sorted(order[position] for order in shown) == list(range(count))


def test_combine_by_hand():
    # order 1: x at A (0.8), y at B; order 2: y at A (0.7), x at B (0.3)
    found = combine([(0, 1), (1, 0)], [(0.8, 0.2), (0.7, 0.3)])
    assert found.wins == pytest.approx((0.55, 0.45))
    assert found.position_mass == pytest.approx((0.75, 0.25))
    assert found.position_bias == pytest.approx(0.25)
    assert found.winner == 0 and not found.consistent
    one = combine([(0, 1)], [(0.8, 0.2)])
    assert one.position_bias is None and one.consistent and one.wins == (0.8, 0.2)


# -- the metric ------------------------------------------------------------------------------


def test_definition_rules():
    with pytest.raises(MetricDefinitionError, match="a field they differ in"):
        ArenaGEval(name="A", evaluation_params=["input"], criteria="c")
    with pytest.raises(MetricDefinitionError, match="'criteria' or 'evaluation_steps'"):
        ArenaGEval(name="A", evaluation_params=["actual_output"])
    for path in sorted(ARENA.glob("*.toml")):
        loaded = load_metric(path)
        assert metric_from_dict(loaded.to_dict()).to_dict() == loaded.to_dict()


def test_the_prompt_letters_the_contestants_after_the_shared_input():
    judge = FakeJudge()
    metric().run(arena("First.", "Second."), JudgeSession(judge))
    first, second = (call[1] for call in judge.calls)
    assert first.blocks[0] == HEADER and first.blocks[1] == "Input:\nThe article.\n\n"
    assert first.blocks[2].startswith("Evaluation criteria:\nThe better summary.")
    assert first.blocks[3:] == (
        "Contestant A:\nActual Output:\nFirst.\n\n",
        "Contestant B:\nActual Output:\nSecond.\n\n",
    )
    assert second.blocks[:3] == first.blocks[:3]  # the orders share everything up to them
    assert second.blocks[3:] == (
        "Contestant A:\nActual Output:\nSecond.\n\n",
        "Contestant B:\nActual Output:\nFirst.\n\n",
    )
    assert first.question == "Best contestant (A or B):"
    assert judge.calls[0][2] == ("A", "B")


def test_debiasing_cancels_a_lean_to_the_first_position_and_measures_it():
    judge = PositionJudge(lean=2.0, edge=0.5)  # strongly first, a little for "good"
    case = arena("A bad one.", "A good one.")
    debiased = metric().run(case, JudgeSession(judge))
    trace = debiased.trace.to_dict()
    assert trace["winner"] == "y"  # the better one wins once the lean is averaged out
    assert trace["probabilities"]["y"] > trace["probabilities"]["x"]
    assert trace["position_bias"] > 0.2 and trace["consistent"] is False
    assert len(trace["orders"]) == 2
    one = metric(debias=False).run(case, JudgeSession(PositionJudge(lean=2.0, edge=0.5)))
    assert one.trace.to_dict()["winner"] == "x"  # the first position wins
    assert one.trace.to_dict()["position_bias"] is None
    assert debiased.success is True and debiased.score == trace["probabilities"]["y"]


def test_three_contestants_are_judged_in_three_rotations():
    judge = PositionJudge(lean=0.0, edge=1.0)
    result = metric().run(arena("one", "a good one", "three"), JudgeSession(judge))
    assert len(judge.calls) == 3
    assert judge.calls[0][1].question == "Best contestant (A, B or C):"
    assert result.trace.to_dict()["winner"] == "y"
    assert result.trace.to_dict()["position_bias"] == pytest.approx(0.0)


def test_measure_returns_the_winners_name_as_deepeval_does():
    m = metric()
    assert (
        m.measure(arena("A bad one.", "A good one."), JudgeSession(PositionJudge(0.0, 1.0))) == "y"
    )
    assert m.winner == "y" and m.success is True


def test_an_arena_metric_refuses_other_cases_and_too_many_contestants():
    with pytest.raises(DataError, match="is a single-turn case, which metric 'Better'"):
        evaluate(
            [LLMTestCase(input="q", actual_output="a")], [metric()], model=JudgeSession(FakeJudge())
        )
    many = arena(*[str(i) for i in range(11)], names="abcdefghijk")
    with pytest.raises(DataError, match="at most 10 contestants"):
        evaluate([many], [metric()], model=JudgeSession(FakeJudge()))


# -- the pairwise bench ----------------------------------------------------------------------


def write_pairs(tmp_path: Path) -> Path:
    lines = []
    for doc in range(4):
        for k, preferred_first in enumerate((True, False)):
            good, bad = f"A good summary {doc}{k}.", f"A bad summary {doc}{k}."
            outputs = [good, bad] if preferred_first else [bad, good]
            lines.append(
                {
                    "id": f"d{doc}-{k}",
                    "doc": f"d{doc}",
                    "contestants": [
                        {"name": n, "test_case": {"input": f"Doc {doc}", "actual_output": o}}
                        for n, o in zip(("P", "Q"), outputs, strict=True)
                    ],
                    "labels": {"preferred": "P" if preferred_first else "Q"},
                }
            )
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path


def test_pairwise_bench_agreement_with_and_without_debiasing(tmp_path: Path):
    pytest.importorskip("scipy")
    from anvil_local.bench.report import markdown
    from anvil_local.bench.run import bench
    from anvil_local.bench.suite import MetricSpec

    rows = read_cases(write_pairs(tmp_path))
    judge = PositionJudge(lean=2.0, edge=0.5)
    specs = [
        (metric(), MetricSpec(Path("a.toml"), "preferred")),
        (metric(debias=False, name="One order"), MetricSpec(Path("b.toml"), "preferred")),
    ]

    def run(rows, metrics, **kwargs):
        return evaluate(rows, metrics, model=JudgeSession(judge), use_cache=False)

    result = bench(rows, specs, [None], run, source=str(tmp_path / "pairs.jsonl"))
    debiased, one = result.outcomes
    assert debiased.kind == one.kind == "pairwise"
    assert debiased.agreement["agreement"].value == 1.0
    assert one.agreement["agreement"].value == 0.5  # always the first: right half the time
    assert debiased.agreement["position_bias"] > 0.2
    assert one.agreement["position_bias"] is None
    assert debiased.agreement["preferred_first"] == 0.5
    (comparison,) = result.comparisons
    assert comparison.statistic == "agreement"
    assert comparison.difference.value == pytest.approx(-0.5)
    text = markdown(result)
    assert "| agreement | P(preferred) | position bias | orders disagree |" in text
    assert "| Better | preferred | 8 | 0 | 1.000" in text and "One order" in text


def test_a_preference_that_names_no_contestant_is_refused_before_judging(tmp_path: Path):
    pytest.importorskip("scipy")
    from anvil_local.bench.run import bench
    from anvil_local.bench.suite import MetricSpec

    path = write_pairs(tmp_path)
    rows = read_cases(path)
    rows[0].case.metadata["labels"]["preferred"] = "Z"
    judge = FakeJudge()
    with pytest.raises(DataError, match="no preference 'preferred' naming one of its"):
        bench(
            rows,
            [(metric(), MetricSpec(Path("a.toml"), "preferred"))],
            [None],
            lambda *a, **k: evaluate(*a, model=JudgeSession(judge)),
            source=str(path),
        )
    assert judge.calls == []
    with pytest.raises(DataError, match="picks a winner"):
        bench(
            read_cases(path),
            [(metric(), MetricSpec(Path("a.toml"), "preferred"))],
            [None],
            lambda *a, **k: None,
            source=str(path),
            fit_calibration=True,
        )
