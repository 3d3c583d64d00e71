"""DeepEval code ports by changing its imports: every constructor keyword DeepEval has is
accepted (read from DeepEval's own signatures when it is installed), keywords without
effect change nothing, the ones we cannot honour are refused in one typed line, templates
replace the prompt text while the score is still read over the allowed scores, the
bottom-up warning, `compare`, `MLLMImage`, `EvaluationDataset` and `Golden`."""

from __future__ import annotations

import ast
import inspect
import json
import re
import warnings
from pathlib import Path

import pytest

import anvil_local
from anvil_local import (
    ArenaGEval,
    ArenaGEvalTemplate,
    ArenaTestCase,
    BinaryJudgementNode,
    Contestant,
    ConversationalGEval,
    ConversationalGEvalTemplate,
    ConversationalTestCase,
    DAGMetric,
    DeepAcyclicGraph,
    EvaluationDataset,
    GEval,
    GEvalTemplate,
    Golden,
    LLMTestCase,
    MLLMImage,
    SingleTurnParams,
    TaskNode,
    Turn,
    UnsupportedFeature,
    VerdictNode,
    compare,
    evaluate,
)
from anvil_local.errors import AnvilError, DataError
from anvil_local.judge.prompt import HEADER
from tests.fakes import FakeJudge

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
CASE = LLMTestCase(input="The article.", actual_output="The summary.", id="c1")
STEPS = ["Check the summary against the article."]

# -- DeepEval's signatures ---------------------------------------------------------------

#: DeepEval's public constructors and functions, by their import path, and ours.
PORTED = [
    ("deepeval.metrics", "GEval"),
    ("deepeval.metrics", "ConversationalGEval"),
    ("deepeval.metrics", "ArenaGEval"),
    ("deepeval.metrics", "DAGMetric"),
    ("deepeval.metrics", "ConversationalDAGMetric"),
    ("deepeval.metrics", "AnswerRelevancyMetric"),
    ("deepeval.metrics", "FaithfulnessMetric"),
    ("deepeval.metrics", "ContextualPrecisionMetric"),
    ("deepeval.metrics", "ContextualRecallMetric"),
    ("deepeval.metrics", "ContextualRelevancyMetric"),
    ("deepeval.metrics", "HallucinationMetric"),
    ("deepeval.metrics", "SummarizationMetric"),
    ("deepeval.metrics", "PromptAlignmentMetric"),
    ("deepeval.metrics", "BiasMetric"),
    ("deepeval.metrics", "ToxicityMetric"),
    ("deepeval.metrics", "JsonCorrectnessMetric"),
    ("deepeval.metrics", "ExactMatchMetric"),
    ("deepeval.metrics", "PatternMatchMetric"),
    ("deepeval.metrics", "TurnFaithfulnessMetric"),
    ("deepeval.metrics", "TurnRelevancyMetric"),
    ("deepeval.metrics", "TurnContextualPrecisionMetric"),
    ("deepeval.metrics", "TurnContextualRecallMetric"),
    ("deepeval.metrics", "TurnContextualRelevancyMetric"),
    ("deepeval.test_case", "ToolCall"),
    ("deepeval.metrics.dag", "TaskNode"),
    ("deepeval.metrics.dag", "BinaryJudgementNode"),
    ("deepeval.metrics.dag", "NonBinaryJudgementNode"),
    ("deepeval.metrics.dag", "VerdictNode"),
    ("deepeval.metrics.conversational_dag", "ConversationalTaskNode"),
    ("deepeval.metrics.conversational_dag", "ConversationalBinaryJudgementNode"),
    ("deepeval.metrics.conversational_dag", "ConversationalNonBinaryJudgementNode"),
    ("deepeval.metrics.conversational_dag", "ConversationalVerdictNode"),
    ("deepeval.test_case", "LLMTestCase"),
    ("deepeval.test_case", "ConversationalTestCase"),
    ("deepeval.test_case", "Turn"),
    ("deepeval.test_case", "ArenaTestCase"),
    ("deepeval.test_case", "Contestant"),
    ("deepeval.test_case", "MLLMImage"),
    ("deepeval.dataset", "EvaluationDataset"),
    ("deepeval.dataset", "Golden"),
    ("deepeval", "compare"),
]
_SIMPLE = (type(None), bool, int, float, str)


def _keywords(obj: object) -> dict[str, inspect.Parameter]:
    return {
        name: p
        for name, p in inspect.signature(obj).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name != "self"
    }


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@pytest.mark.parametrize(("module", "name"), PORTED, ids=[n for _, n in PORTED])
def test_every_deepeval_keyword_is_accepted_with_its_default(module, name, monkeypatch):
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    theirs_module = pytest.importorskip(module)
    theirs = _keywords(getattr(theirs_module, name))
    ours = _keywords(getattr(anvil_local, name))
    missing = [k for k in theirs if k not in ours and _snake(k) not in ours]
    assert not missing, f"{name} lacks DeepEval's keyword(s) {missing}"
    for key, param in theirs.items():
        default = param.default
        if key in ours and default is not param.empty and isinstance(default, _SIMPLE):
            assert ours[key].default == default, f"{name}({key}=) defaults differ"


def test_the_signature_check_would_see_a_missing_keyword():
    def deepeval_like(name, new_keyword=1): ...

    def ours_like(name): ...

    assert [k for k in _keywords(deepeval_like) if k not in _keywords(ours_like)] == ["new_keyword"]


# -- keywords without effect and keywords refused ----------------------------------------

NO_EFFECT = {"async_mode": False, "top_logprobs": 5, "flaky": True, "_include_g_eval_suffix": False}


def test_keywords_without_effect_leave_the_prompts_and_the_score_unchanged():
    plain, noisy = FakeJudge(), FakeJudge()
    a = GEval(name="G", evaluation_params=P, evaluation_steps=STEPS)
    b = GEval(name="G", evaluation_params=P, evaluation_steps=STEPS, **NO_EFFECT)
    assert a.run(CASE, plain).score == b.run(CASE, noisy).score
    assert [c[1] for c in plain.calls] == [c[1] for c in noisy.calls]
    assert a.to_dict() == b.to_dict()  # nor the cache key
    assert b.async_mode is False and b.top_logprobs == 5


def test_dag_keywords_without_effect_and_system_one_refused():
    dag = _dag()
    metric = DAGMetric(name="D", dag=dag, async_mode=False, flaky=True, eval_mode="llm")
    assert metric.to_dict() == DAGMetric(name="D", dag=dag).to_dict()
    with pytest.raises(UnsupportedFeature, match=r"system_one_model=.*one local judge"):
        DAGMetric(name="D", dag=dag, system_one_model="jev")
    with pytest.raises(UnsupportedFeature, match="eval_mode='hybrid'"):
        DAGMetric(name="D", dag=dag, eval_mode="hybrid")


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: ConversationalGEval(name="C", criteria="c", _audio_model="gpt-audio"),
            id="audio-model",
        ),
        pytest.param(lambda: LLMTestCase(input="x", multimodal=True), id="multimodal-case"),
        pytest.param(lambda: Turn(role="user", content="hi", audio=b"..."), id="turn-audio"),
        pytest.param(
            lambda: ArenaGEval(
                name="A", evaluation_params=P, criteria="c", evaluation_template=object
            ),
            id="arena-template",
        ),
    ],
)
def test_what_we_cannot_honour_is_one_typed_line_not_a_type_error(build):
    with pytest.raises(UnsupportedFeature) as info:
        build()
    assert not isinstance(info.value, TypeError)
    assert "\n" not in info.value.one_line()


# -- evaluation_params=None --------------------------------------------------------------


def test_geval_without_params_shows_every_field_the_case_has():
    judge, named = FakeJudge(), FakeJudge()
    case = LLMTestCase(input="Q", actual_output="A", expected_output="E")
    GEval(name="G", evaluation_steps=STEPS).run(case, judge)
    params = [
        SingleTurnParams.INPUT,
        SingleTurnParams.EXPECTED_OUTPUT,
        SingleTurnParams.ACTUAL_OUTPUT,
    ]
    GEval(name="G", evaluation_params=params, evaluation_steps=STEPS).run(case, named)
    assert judge.calls[0][1] == named.calls[0][1]
    assert "Expected Output:\nE" in judge.calls[0][1].text()


def test_geval_without_params_round_trips_and_refuses_an_empty_case():
    metric = GEval(name="G", criteria="c")
    assert "evaluation_params" not in metric.to_dict()
    assert GEval.from_dict(metric.to_dict()).evaluation_params is None
    with pytest.raises(AnvilError, match="any test-case field"):
        metric.run(LLMTestCase(id="empty"), FakeJudge())


def test_conversational_geval_without_params_reads_the_conversation():
    judge = FakeJudge()
    case = ConversationalTestCase(
        turns=[Turn(role="user", content="Hi"), Turn(role="assistant", content="Hello")],
        scenario="A greeting.",
    )
    metric = ConversationalGEval(name="Polite", evaluation_steps=STEPS)
    result = metric.run(case, judge)
    assert result.error is None
    text = judge.calls[0][1].text()
    assert "A greeting." in text and "Hello" in text


# -- templates ---------------------------------------------------------------------------


class MyTemplate(GEvalTemplate):
    @staticmethod
    def generate_evaluation_results(evaluation_steps, test_case_content, score_range):
        return f"MY PROMPT\n{evaluation_steps}\n{test_case_content}\nRange {score_range}"


def test_a_template_replaces_the_prompt_text_and_the_score_is_still_read_over_the_range():
    judge = FakeJudge(scores={"Score (": [0.0] * 10 + [1.0]})
    metric = GEval(
        name="G", evaluation_params=P, evaluation_steps=STEPS, evaluation_template=MyTemplate
    )
    result = metric.run(CASE, judge)
    kind, prompt, span = judge.calls[0]
    assert (kind, span) == ("score", (0, 10))
    assert prompt.blocks[0] == HEADER
    assert prompt.blocks[1].startswith("MY PROMPT\n1. Check the summary")
    assert (
        "Actual Output:\nThe summary." in prompt.blocks[1] and "Range (0, 10)" in prompt.blocks[1]
    )
    assert result.score == pytest.approx(1.0)
    assert metric.to_dict()["evaluation_template"] == f"{__name__}:MyTemplate"
    rebuilt = GEval.from_dict(metric.to_dict())
    assert rebuilt.evaluation_template is MyTemplate


def test_the_default_template_keeps_our_layout():
    default, explicit = FakeJudge(), FakeJudge()
    GEval(name="G", evaluation_params=P, evaluation_steps=STEPS).run(CASE, default)
    GEval(
        name="G", evaluation_params=P, evaluation_steps=STEPS, evaluation_template=GEvalTemplate
    ).run(CASE, explicit)
    assert default.calls[0][1] == explicit.calls[0][1]
    assert len(default.calls[0][1].blocks) > 2  # segmented, so prefixes are shared


def test_a_template_steps_prompt_is_used_and_keys_its_own_steps():
    class Steps(GEvalTemplate):
        @staticmethod
        def generate_evaluation_steps(criteria, parameters):
            return f"CUSTOM STEPS for {parameters}: {criteria}"

    judge = FakeJudge(texts={"numbered": "1. Read it all.\n2. Check the flow.\n3. Score it."})
    metric = GEval(name="G", evaluation_params=P, criteria="Flows.", evaluation_template=Steps)
    metric.run(CASE, judge, include_reason=False)
    kind, prompt, regex = judge.calls[0]
    assert kind == "generate" and prompt.blocks[0].startswith("CUSTOM STEPS for the Input")
    assert regex.startswith("1\\. ")  # still a numbered list by grammar
    plain = GEval(name="G", evaluation_params=P, criteria="Flows.")
    plain.run(CASE, judge, include_reason=False)
    assert plain.steps_generated == 1  # not the custom template's stored steps


def test_conversational_template_gets_fields_and_turns():
    class Conv(ConversationalGEvalTemplate):
        @staticmethod
        def generate_evaluation_results(turns, parameters, **rest):
            return f"TURNS\n{turns}\nPARAMS {parameters}"

    judge = FakeJudge()
    case = ConversationalTestCase(turns=[Turn(role="user", content="Hi there")])
    ConversationalGEval(
        name="C", evaluation_steps=STEPS, evaluation_template=Conv, strict_mode=True
    ).run(case, judge)
    block = judge.calls[0][1].blocks[1]
    assert block.startswith("TURNS\n") and "Hi there" in block
    assert judge.calls[0][0] == "choose"  # strict: Yes/No read from the logits


def test_template_default_methods_render_our_texts():
    steps = GEvalTemplate.generate_evaluation_steps(criteria="Flows.", parameters="the Input")
    assert "Flows." in steps and "the Input" in steps
    text = GEvalTemplate.generate_evaluation_results(
        evaluation_steps="1. a", test_case_content="Input:\nx", parameters="the Input"
    )
    assert "1. a" in text and "from 0 (worst) to 10 (best)" in text
    assert ArenaGEvalTemplate.generate_evaluation_steps("c", "p") == steps.replace(
        "Flows.", "c"
    ).replace("the Input", "p")


# -- the bottom-up warning ---------------------------------------------------------------


def _dag() -> DeepAcyclicGraph:
    judge = BinaryJudgementNode(criteria="Is it short?", evaluation_params=P)
    judge.add_verdict(True, score=10)
    judge.add_verdict(False, score=0)
    return DeepAcyclicGraph(root_nodes=[judge])


def test_children_warn_as_deepeval_does_and_top_down_does_not():
    with pytest.warns(
        DeprecationWarning, match="Passing 'children' to 'BinaryJudgementNode'"
    ) as rec:
        node = BinaryJudgementNode(
            criteria="c",
            children=[VerdictNode(verdict=True, score=1), VerdictNode(verdict=False, score=0)],
        )
    assert rec[0].filename == __file__  # names the line that built it
    assert "add_verdict()" in str(rec[0].message)
    with pytest.warns(DeprecationWarning, match="'TaskNode'.*'add_node\\(\\)'"):
        TaskNode(instructions="i", output_label="o", children=[node])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _dag()
        anvil_local.dag_from_dict(anvil_local.dag_to_dict(_dag()))  # files build quietly


# -- compare, MLLMImage, EvaluationDataset, Golden ---------------------------------------


def _arena() -> ArenaTestCase:
    outputs = {"a": "Out A", "b": "Out B"}
    return ArenaTestCase(
        contestants=[
            Contestant(name=n, test_case=LLMTestCase(input="Q", actual_output=o))
            for n, o in outputs.items()
        ]
    )


def test_compare_counts_each_contestant_wins():
    judge = FakeJudge(choices={"": [0.9, 0.1]})  # always the letter shown first
    metric = ArenaGEval(name="A", evaluation_params=P, evaluation_steps=STEPS, debias=False)
    assert compare([_arena(), _arena()], metric, judge=judge) == {"a": 2}
    with pytest.raises(DataError, match="takes an ArenaGEval"):
        compare([_arena()], GEval(name="G", evaluation_params=P, criteria="c"))


def test_an_image_is_refused_in_one_line():
    image = MLLMImage(url="https://example.org/cat.png")
    for build in (
        lambda: LLMTestCase(input=f"What is this? {image}"),
        lambda: LLMTestCase(input="x", retrieval_context=[image]),
        lambda: Turn(role="user", content=f"see {image}"),
        lambda: Golden(input=f"{image}"),
    ):
        with pytest.raises(UnsupportedFeature, match="this judge reads text only"):
            build()


def test_deepeval_dataset_loop_ports(tmp_path):
    goldens = tmp_path / "goldens.jsonl"
    rows = [{"question": "Q1", "expected_output": "E1"}, {"question": "Q2"}]
    goldens.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = EvaluationDataset()
    dataset.add_goldens_from_jsonl_file(goldens, input_key_name="question")
    assert [g.input for g in dataset.goldens] == ["Q1", "Q2"]
    assert dataset.goldens[0].expected_output == "E1"
    metric = GEval(name="G", evaluation_params=P, evaluation_steps=STEPS)
    with pytest.raises(DataError, match="goldens but no test cases"):
        evaluate(dataset, [metric], model=FakeJudge(), use_cache=False)
    for golden in dataset.goldens:
        dataset.add_test_case(LLMTestCase(input=golden.input, actual_output="answer"))
    result = evaluate(dataset, [metric], model=FakeJudge(), use_cache=False)
    assert len(result.lines) == 2


def test_dataset_reads_our_case_files_and_refuses_the_hosted_service(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x", "input": "Q", "actual_output": "A"}) + "\n")
    dataset = EvaluationDataset()
    dataset.add_test_cases_from_jsonl_file(cases)
    assert [c.id for c in dataset.test_cases] == ["x"]
    with pytest.raises(UnsupportedFeature, match="offline"):
        dataset.pull(alias="prod")
    with pytest.raises(UnsupportedFeature, match="offline"):
        EvaluationDataset(confident_api_key="key")


PORTS = Path(__file__).parent.parent / "examples" / "porting"


def _without_imports(path: Path) -> str:
    tree = ast.parse(path.read_text())
    tree.body = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    return ast.dump(tree)


@pytest.mark.parametrize(
    "name", ["geval_custom_template", "dag", "conversational_geval", "test_rag"]
)
def test_the_documented_examples_port_by_their_imports_alone(name):
    """examples/porting/NAME.py is examples/porting/deepeval/NAME.py with only its imports
    changed (the real-model test runs the ports)."""
    original, port = PORTS / "deepeval" / f"{name}.py", PORTS / f"{name}.py"
    assert _without_imports(port) == _without_imports(original)
    assert "deepeval" not in port.read_text().split('"""', 2)[2]
    assert "from deepeval" in original.read_text()
