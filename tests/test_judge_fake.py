"""Judge primitives on a fake runtime with scripted logits: arithmetic, token counting,
context overflow, generation budget."""

import numpy as np
import pytest

from anvil_local.errors import ContextOverflow
from anvil_local.judge import Prompt
from tests.fakes import IM_END, N_VOCAB, FakeRuntime, answer_text, fake_judge, logits_from

BLOCKS = ("Header.\n\n", "Input:\nA document.\n\n", "Actual Output:\nA summary.\n\n")


def scripted(table):
    """Logits chosen by the text generated so far in the answer."""

    def script(tokens):
        runtime = FakeRuntime()
        return logits_from(table.get(answer_text(runtime, tokens), {IM_END: 1.0}))

    return script


def test_score_reads_every_integer_including_ten():
    # first digit: "1" 0.4, "7" 0.6; after "1": end 0.25, "0" 0.75
    judge = fake_judge(scripted({"": {"1": 0.4, "7": 0.6}, "1": {IM_END: 0.25, "0": 0.75}}))
    result = judge.score(Prompt(BLOCKS, "Score?"), 0, 10)
    dist = result.distribution()
    assert list(dist) == list(range(11))
    assert dist[1] == pytest.approx(0.1)
    assert dist[10] == pytest.approx(0.3)
    assert dist[7] == pytest.approx(0.6)
    assert sum(dist.values()) == pytest.approx(1.0)
    assert result.weighted == pytest.approx(1 * 0.1 + 10 * 0.3 + 7 * 0.6)
    assert result.most_likely == 7


def test_no_and_none_are_both_reachable():
    judge = fake_judge(scripted({"": {"N": 1.0}, "N": {"o": 1.0},
                                 "No": {IM_END: 0.2, "n": 0.8}, "Non": {"e": 1.0}}))  # fmt: skip
    result = judge.choose(Prompt(BLOCKS, "No or None?"), ["No", "None"])
    assert result.distribution() == pytest.approx({"No": 0.2, "None": 0.8})
    assert result.choice == "None"


def test_a_second_question_evaluates_only_the_new_suffix():
    judge = fake_judge()
    runtime = judge.runtime
    first = judge.choose(Prompt(BLOCKS, "First question?"), ["Yes", "No"])
    second = judge.choose(Prompt(BLOCKS, "Second question, longer?"), ["Yes", "No"])
    assert first.usage.reused_tokens == 0
    assert first.usage.evaluated_tokens == first.usage.prompt_tokens
    shared = len(judge.prompt_tokens(Prompt(BLOCKS, "")))
    tail = len(runtime.tokenize("<|im_end|>\n<|im_start|>assistant\n", special=True))
    assert second.usage.reused_tokens == shared - tail
    question = len("Second question, longer?")
    assert second.usage.evaluated_tokens == question + tail


def test_choice_keeps_declared_order_and_reports_every_option():
    judge = fake_judge(scripted({"": {"B": 0.5, "A": 0.3, "C": 0.2}}))
    result = judge.choose(Prompt(BLOCKS, "Pick"), ["C", "A", "B"])
    assert result.options == ("C", "A", "B")
    assert result.probabilities == pytest.approx((0.2, 0.3, 0.5))
    assert result.choice == "B"


def test_context_overflow_is_a_typed_error_naming_tokens_and_limit():
    judge = fake_judge(n_ctx=64)
    with pytest.raises(ContextOverflow) as info:
        judge.choose(Prompt(BLOCKS, "Q?", case_id="case-7"), ["Yes", "No"])
    assert info.value.limit == 64 and info.value.tokens > 64
    assert "case-7" in str(info.value) and "64" in str(info.value)


def test_generate_stops_at_end_of_turn_or_budget():
    judge = fake_judge(scripted({"": {"h": 1.0}, "h": {"i": 1.0}, "hi": {IM_END: 1.0}}))
    done = judge.generate(Prompt(BLOCKS, "Say hi"), max_tokens=10)
    assert (done.text, done.finished, done.tokens) == ("hi", True, 2)
    cut = judge.generate(Prompt(BLOCKS, "Say hi"), max_tokens=1)
    assert (cut.text, cut.finished) == ("h", False)


def test_duplicate_options_are_rejected():
    judge = fake_judge(lambda t: np.zeros(N_VOCAB, dtype=np.float32))
    with pytest.raises(ValueError):
        judge.choose(Prompt(BLOCKS, "?"), ["Yes", " Yes"])


def test_decode_batches_never_hold_one_token_alone():
    from anvil_local.judge.runtime import batches

    assert batches(0, 512) == []
    assert batches(1, 512) == [1]
    assert batches(2, 512) == [2]
    assert batches(512, 512) == [512]
    assert batches(513, 512) == [511, 2]
    assert batches(1025, 512) == [512, 511, 2]
    assert batches(700, 512) == [512, 188]
    for count in range(2, 1200, 7):
        sizes = batches(count, 64)
        assert sum(sizes) == count and min(sizes) >= 2 and max(sizes) <= 64


def rambler(text: str):
    """A model that says `text` one byte at a time, then ends its turn."""

    def script(tokens):
        said = answer_text(FakeRuntime(), tokens)
        nxt = text[len(said)] if said == text[: len(said)] and len(said) < len(text) else None
        return logits_from({nxt: 1.0} if nxt else {IM_END: 1.0})

    return script


def test_generate_ends_before_the_first_stop_string():
    judge = fake_judge(rambler("Intro\nBody\n\nAnd then a long ramble about other things."))
    result = judge.generate(Prompt(BLOCKS, "List the headings"), max_tokens=100, stop=["\n\n"])
    assert (result.text, result.finished) == ("Intro\nBody", True)
    assert result.tokens <= len("Intro\nBody\n\n")  # decoding stopped there, not at the end


def test_a_task_node_budget_and_stop_shape_its_output_and_mark_a_cut():
    from anvil_local import DAGMetric, LLMTestCase
    from anvil_local.metrics.dag import BinaryJudgementNode, DeepAcyclicGraph, TaskNode, VerdictNode

    def graph(**task_options):
        check = BinaryJudgementNode(
            "Are they all there?", [VerdictNode(True, score=10), VerdictNode(False, score=0)]
        )
        task = TaskNode(
            "List the headings.",
            "Headings",
            [check],
            evaluation_params=["actual_output"],
            **task_options,
        )
        return DAGMetric("H", DeepAcyclicGraph([task]), include_reason=False)

    case = LLMTestCase(actual_output="Intro\nBody")
    judge = fake_judge(rambler("Intro\nBody\n\nAnd then a long ramble."))
    stopped = graph(stop=["\n\n"]).run(case, judge).trace.to_dict()["path"][0]
    assert stopped["output"] == "Intro\nBody" and "truncated" not in stopped
    cut = graph(max_tokens=5).run(case, judge).trace.to_dict()["path"][0]
    assert cut["output"] == "Intro" and cut["truncated"] is True
    assert graph(max_tokens=5, stop=["\n\n"]).to_dict()["nodes"]["task-1"]["max_tokens"] == 5


def test_a_trie_count_that_stopped_at_its_limit_is_marked_in_the_summary():
    from anvil_local import GEval, LLMTestCase, SingleTurnParams, evaluate
    from anvil_local.judge.trie import PromptTrie
    from anvil_local.metrics.result import MetricResult
    from anvil_local.run.report import render_summary

    judge = fake_judge()
    metric = GEval(
        "Brevity",
        criteria="Short.",
        evaluation_steps=["Check the length."],
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
        include_reason=False,
    )
    case = LLMTestCase(input="A document.", actual_output="A summary.")
    whole = evaluate([case], [metric], model=judge, use_cache=False)
    assert not whole.usage.trie_capped
    assert "counting stopped" not in render_summary(whole)

    judge.trie = PromptTrie(limit=5)  # far fewer positions than one prompt holds
    capped = evaluate([case], [metric], model=judge, use_cache=False)
    usage = capped.lines[0].result.usage
    assert usage.trie_capped and capped.usage.trie_capped
    assert MetricResult.from_dict(capped.lines[0].result.to_dict()).usage.trie_capped
    assert "(counting stopped at the trie's limit: too small)" in render_summary(capped)


def test_a_runtime_without_hidden_states_says_so_in_one_typed_error():
    from anvil_local.errors import ModelError

    with pytest.raises(ModelError, match="reads no hidden states"):
        fake_judge().hidden_state(Prompt(("Input:\nx\n\n",), "Q?"))
